package config

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestUnknownOption(t *testing.T) {
	requireValidHostname(t)
	tests := []struct {
		name    string
		args    []string
		env     []string
		file    string
		want    []string
		notWant string
	}{
		{"flag", []string{"--foo", "1"}, nil, "", []string{`unknown option "foo" (command-line flag --foo)`}, "did you mean"},
		{"single-dash flag", []string{"-zzzzzz=1"}, nil, "", []string{`unknown option "zzzzzz" (command-line flag -zzzzzz)`}, "did you mean"},
		{"flag suggestion", []string{"--lease-tl", "3s"}, nil, "", []string{`unknown option "lease-tl"`, "did you mean --lease-ttl?"}, ""},
		{"flag case", []string{"--Name=x"}, nil, "", []string{`unknown option "Name"`, "did you mean --name?"}, ""},
		{"env", nil, []string{"TASKD_FOO=1"}, "", []string{`unknown option "foo" (environment variable TASKD_FOO)`}, "did you mean"},
		{"env suggestion", nil, []string{"TASKD_WORKER=3"}, "", []string{"environment variable TASKD_WORKER", "did you mean TASKD_WORKERS?"}, ""},
		{"env lower case", nil, []string{"TASKD_lease_ttl=3s"}, "", []string{"environment variable TASKD_lease_ttl", "did you mean TASKD_LEASE_TTL?"}, ""},
		{"env every unknown reported", nil, []string{"TASKD_ZZZ=1", "TASKD_FOO=1"}, "", []string{"TASKD_FOO", "TASKD_ZZZ"}, ""},
		{"env suffix only for repeatable options", nil, []string{"TASKD_LISTEN_1=127.0.0.1:1", "TASKD_WORKERS_2=3"}, "",
			[]string{"environment variable TASKD_LISTEN_1", "environment variable TASKD_WORKERS_2"}, ""},
		{"flag with a newline, quoted", []string{"-a\nb=1"}, nil, "", []string{`unknown option "a\nb" (command-line flag "-a\nb")`}, ""},
		{"env with a newline, quoted", nil, []string{"TASKD_\n=1"}, "", []string{`(environment variable "TASKD_\n")`}, ""},
		{"env empty suffix", nil, []string{"TASKD_EXEC_=a=true"}, "", []string{"environment variable TASKD_EXEC_"}, ""},
		{"env suffix without separator", nil, []string{"TASKD_EXECS=a=true"}, "", []string{"environment variable TASKD_EXECS"}, ""},
		{"file", nil, nil, "name = a\n\nfoo = 1\n", []string{`unknown option "foo" (config file `, "line 3"}, "did you mean"},
		{"file suggestion", nil, nil, "lease_ttl = 3s\n", []string{`unknown option "lease_ttl"`, "line 1", "did you mean lease-ttl?"}, ""},
		{"file with dashes", nil, nil, "--listen = :1\n", []string{`unknown option "--listen"`, "did you mean listen?"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeFile(t, tc.file)}, args...)
			}
			_, err := Load(args, tc.env, io.Discard)
			wantErr(t, err, tc.want...)
			if tc.notWant != "" && err != nil && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("error %q contains %q", err, tc.notWant)
			}
		})
	}
}

// TestEnvSuffixesCollideWithNoOption checks that no option's variable, nor
// one that the exec handler sets, reads as a repeatable option's variable
// with a suffix, so that accepting TASKD_EXEC_<suffix> takes no variable
// away from another option.
func TestEnvSuffixesCollideWithNoOption(t *testing.T) {
	names := make([]string, 0, len(options)+len(ignoredEnv))
	for _, o := range options {
		names = append(names, envName(o.name))
	}
	for k := range ignoredEnv {
		names = append(names, k)
	}
	repeatable := 0
	for _, r := range options {
		if !r.repeatable {
			continue
		}
		repeatable++
		for _, k := range names {
			if strings.HasPrefix(k, envName(r.name)+"_") {
				t.Errorf("%s reads as a further variable of the repeatable option --%s", k, r.name)
			}
		}
		if got := envOption(envName(r.name) + "_X"); got != r {
			t.Errorf("envOption(%s_X) = %v, want --%s", envName(r.name), got, r.name)
		}
	}
	if repeatable < 2 {
		t.Errorf("%d repeatable options, want at least --exec and --webhook", repeatable)
	}
	for _, o := range options {
		if got := envOption(envName(o.name)); got != o {
			t.Errorf("envOption(%s) = %v, want --%s", envName(o.name), got, o.name)
		}
	}
}

func TestIgnoredEnv(t *testing.T) {
	requireValidHostname(t)
	env := []string{
		"TASKD_IDENTITY=bob", "TASKD_TASK_ID=01H", "TASKD_KIND=k", "TASKD_RUN=3",
		"TASKD_FENCE=7:99", "TASKD_NODE=n1", "TASKD_ATTEMPT=2", "PATH=/bin", "TASKD=1", "TASKDX_Y=1",
		// What an exec command's environment holds besides (a taskd started
		// by an exec command once failed on these as unknown options).
		"TASKD_EXIT_RETRY=75", "TASKD_EXIT_PERMANENT=90", "TASKD_EXIT_CANCEL=91", "TASKD_EXIT_SNOOZE=92",
		"TASKD_LEASE_DEADLINE_CS=123456",
	}
	got, err := Load(nil, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, Default()) {
		t.Fatalf("got %+v, want defaults", got)
	}
}

func TestRemovedOption(t *testing.T) {
	requireValidHostname(t)
	reasons := map[string]string{
		"run-on-every-node": "removed: scope is stated per task (docs/contract.md §6)",
		"cluster-lock":      "removed: taskd fences every commit with etcd revisions instead of a cluster-wide lock",
	}
	for opt, reason := range reasons {
		tests := []struct {
			name string
			args []string
			env  []string
			file string
			src  string
		}{
			{"flag", []string{"--" + opt}, nil, "", "command-line flag --" + opt},
			{"flag with value", []string{"-" + opt + "=true"}, nil, "", "command-line flag -" + opt},
			{"env", nil, []string{envName(opt) + "=true"}, "", "environment variable " + envName(opt)},
			{"file", nil, nil, "\n" + opt + " = true\n", "line 2"},
		}
		for _, tc := range tests {
			t.Run(opt+"/"+tc.name, func(t *testing.T) {
				args := tc.args
				if tc.file != "" {
					args = append([]string{"--config", writeFile(t, tc.file)}, args...)
				}
				_, err := Load(args, tc.env, io.Discard)
				wantErr(t, err, `option "`+opt+`"`, tc.src, reason)
			})
		}
	}
}

func TestFileFormat(t *testing.T) {
	requireValidHostname(t)
	content := "\ufeff# taskd config\r\n" +
		"\r\n" +
		"   # indented comment\n" +
		"name=node-a\n" +
		"  prefix   =   /p/  \n" +
		"data-dir = \"  /dir with spaces  \"\n" +
		"exec = \"k=echo '#not a comment' x=y\"\n" +
		"etcd = \"\"\n" +
		"log-level = \"WARN\"\n"
	p := writeFile(t, content)
	got, err := Load([]string{"--config", p}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Name = "node-a"
	want.Prefix = "/p/"
	want.DataDir = "  /dir with spaces  "
	want.Exec = []KindTarget{{"k", "echo '#not a comment' x=y"}}
	want.LogLevel = "warn"
	want.ConfigFile = p
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestFileErrors(t *testing.T) {
	requireValidHostname(t)
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{"no equals", "# c\nname = a\nlisten\n", []string{"line 3", `want "option = value"`, `"listen"`}},
		{"empty key", "= x\n", []string{"line 1", `want "option = value"`}},
		{"unterminated quote", "\n\nname = \"abc\n", []string{"line 3", "unterminated double quote"}},
		{"lone quote", "name = \"\n", []string{"line 1", "unterminated double quote"}},
		{"duplicate", "name = a\n\n\n\nname = b\n", []string{"line 5", `option "name" is set again (first on line 1)`}},
		{"config inside config", "config = other.conf\n", []string{"line 1", `"config" cannot be set inside a config file`}},
		{"every error reported", "a\nb\n", []string{"line 1", "line 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, tc.content)
			_, err := Load([]string{"--config", p}, nil, io.Discard)
			wantErr(t, err, append([]string{"config file " + p}, tc.want...)...)
		})
	}

	t.Run("missing file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "absent.conf")
		_, err := Load(nil, []string{"TASKD_CONFIG=" + p}, io.Discard)
		wantErr(t, err, "reading config file", p)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("errors.Is(%v, fs.ErrNotExist) = false", err)
		}
	})
}

func TestArgSyntax(t *testing.T) {
	requireValidHostname(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"positional", []string{"serve"}, `unexpected argument "serve"`},
		{"positional after flag", []string{"--name", "a", "b"}, `unexpected argument "b"`},
		{"after terminator", []string{"--", "x"}, `unexpected argument "x"`},
		{"lone dash", []string{"-"}, `unexpected argument "-"`},
		{"three dashes", []string{"---name=a"}, "bad flag syntax: ---name=a"},
		{"leading equals", []string{"-=a"}, "bad flag syntax: -=a"},
		{"missing value", []string{"--lease-ttl"}, "option --lease-ttl needs a value"},
		{"bare boolean takes no value", []string{"--replace", "yes"}, `unexpected argument "yes"`},
		{"boolean value", []string{"--replace=maybe"}, `invalid value "maybe" for --replace: not true or false`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.args, nil, io.Discard)
			wantErr(t, err, tc.want)
		})
	}

	t.Run("terminator alone", func(t *testing.T) {
		got, err := Load([]string{"--workers", "3", "--"}, nil, io.Discard)
		if err != nil || got.Workers != 3 {
			t.Fatalf("got Workers %d, %v", got.Workers, err)
		}
	})
	t.Run("value that looks like a flag", func(t *testing.T) {
		got, err := Load([]string{"--exec", "-x=y"}, nil, io.Discard)
		if err != nil || !reflect.DeepEqual(got.Exec, []KindTarget{{"-x", "y"}}) {
			t.Fatalf("got Exec %q, %v", got.Exec, err)
		}
	})
	t.Run("last flag wins", func(t *testing.T) {
		got, err := Load([]string{"--workers", "3", "-workers=4"}, nil, io.Discard)
		if err != nil || got.Workers != 4 {
			t.Fatalf("got Workers %d, %v", got.Workers, err)
		}
	})
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}, {"--h"}, {"--name", "a", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out bytes.Buffer
			// Help wins over problems that come later: bad environment,
			// missing file.
			_, err := Load(args, []string{"TASKD_FOO=1", "TASKD_CONFIG=/nonexistent"}, &out)
			if !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("Load(%q) error = %v, want flag.ErrHelp", args, err)
			}
			var usage bytes.Buffer
			Usage(&usage)
			if out.String() != usage.String() {
				t.Fatalf("Load wrote %q, want the usage", out.String())
			}
		})
	}
}

func TestUsage(t *testing.T) {
	var b bytes.Buffer
	Usage(&b)
	text := b.String()
	lines := strings.Split(text, "\n")
	for _, o := range options {
		var line string
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "--"+o.name+" ") {
				line = l
				break
			}
		}
		if line == "" {
			t.Errorf("usage has no line for --%s:\n%s", o.name, text)
			continue
		}
		if !strings.Contains(line, " "+o.def+" ") {
			t.Errorf("usage line for --%s lacks its default %q: %q", o.name, o.def, line)
		}
		if !strings.Contains(line, o.help) {
			t.Errorf("usage line for --%s lacks its meaning %q: %q", o.name, o.help, line)
		}
	}
	for _, want := range []string{"TASKD_LEASE_TTL", "--help", "--run-on-every-node", "--cluster-lock", "docs/contract.md §6"} {
		if !strings.Contains(text, want) {
			t.Errorf("usage lacks %q", want)
		}
	}
	// The contract §9 defaults, as written there.
	for _, want := range []string{"./taskd-data", "http://127.0.0.1:2379", "/taskd/", "127.0.0.1:7420", "127.0.0.1:7421",
		"10s", "500ms", "2500ms", "5000ms", "60s", "30s", "256KiB", "24h"} {
		if !strings.Contains(text, want) {
			t.Errorf("usage lacks default %q", want)
		}
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct{ in, want string }{
		{"lease-ttl", "lease-ttl"},
		{"leasettl", "lease-ttl"},
		{"lease-tll", "lease-ttl"},
		{"worker", "workers"},
		{"hisotry", "history"},
		{"webhooks", "webhook"},
		{"execs", "exec"},
		{"xyzzy", ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := suggest(tc.in); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

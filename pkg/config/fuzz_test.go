package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fuzzNodeName is given as the first flag of every fuzzed load, so that the
// machine's host name plays no part; a fuzzed --name overrides it.
const fuzzNodeName = "--name=fuzz-node"

// splitNUL splits a fuzzed string into a list at NUL bytes, which no
// argument or environment entry can hold; "" is the empty list.
func splitNUL(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

// errorNamesItsSubject reports whether one line of a Load error says what
// it is about: an option, a flag, a variable or a config file line.
func errorNamesItsSubject(line string) bool {
	for _, s := range []string{"option", "--", "flag", "TASKD_", "config file"} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// FuzzLoad loads a fuzzed config file, fuzzed flags and a fuzzed
// environment. Load never panics and gives the same answer twice; an error
// names on each of its lines what it is about; a configuration it accepts
// passes Validate, and its --exec and --webhook entries load back the same
// from flags, from a config file (quoted values) and from the environment
// (one entry per variable, never split).
func FuzzLoad(f *testing.F) {
	dir := f.TempDir()
	f.Add("", "", "")
	f.Add("name = a\nlease-ttl = 4s\n# comment\n\nexec = a=echo a\nexec = \"b=echo 'b; c'\"\n", "", "")
	f.Add("webhook = h=http://localhost:8080/h\nlog-level = debug\n", "--exec\x00x=cd jobs; ./send", "TASKD_EXEC_1=y=true")
	f.Add("workers = 0\nmax-payload = 2MiB\n", "--lease-ttl=1s", "TASKD_HISTORY=-1")
	f.Add("foo = 1\nlease_ttl = 3s\nexec = a\nexec = \"b=x\n", "--zzz\x00-h", "TASKD_FOO=1\x00TASKD_EXEC_=x=y")
	f.Add("\ufeffname = n1\nretention = 1h\nmax-catch-up = 5\netcd = http://127.0.0.1:1, \n", "", "TASKD_WEBHOOK=h=ftp://x")
	f.Add("config = other\n", "--\x00extra", "TASKD_LISTEN_1=127.0.0.1:1\x00TASKD_EXEC=a=b\nc")
	f.Add("", "--exec= k =x\x00--webhook\x00k=https://k.example", "TASKD_EXEC= \x00TASKD_CONFIG=")
	f.Fuzz(func(t *testing.T, file, args, env string) {
		path := filepath.Join(dir, "taskd.conf")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		argv := append([]string{fuzzNodeName, "--config", path}, splitNUL(args)...)
		environ := splitNUL(env)

		c, err := Load(argv, environ, io.Discard)
		c2, err2 := Load(argv, environ, io.Discard)
		if fmt.Sprint(err) != fmt.Sprint(err2) || !reflect.DeepEqual(c, c2) {
			t.Fatalf("two loads differ:\n%+v, %v\n%+v, %v", c, err, c2, err2)
		}
		if err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !errorNamesItsSubject(line) {
					t.Fatalf("error line %q names no option, flag, variable or file line (in %q)", line, err)
				}
			}
			return
		}
		if verr := c.Validate(); verr != nil {
			t.Fatalf("Load accepted a configuration that Validate rejects: %v", verr)
		}
		checkEntriesRoundTrip(t, dir, c)
	})
}

// checkEntriesRoundTrip loads c's --exec and --webhook entries again from
// each source alone and checks that they come back unchanged.
func checkEntriesRoundTrip(t *testing.T, dir string, c Config) {
	t.Helper()
	flags := []string{fuzzNodeName}
	var fileText strings.Builder
	var environ []string
	fileOK, envOK := true, true
	for _, list := range []struct {
		name    string
		entries []KindTarget
	}{{"exec", c.Exec}, {"webhook", c.Webhook}} {
		for i, kt := range list.entries {
			entry := kt.Kind + "=" + kt.Target
			flags = append(flags, "--"+list.name, entry)
			fmt.Fprintf(&fileText, "%s = \"%s\"\n", list.name, entry)
			fileOK = fileOK && !strings.ContainsAny(entry, "\n")
			// Zero-padded suffixes sort like the entries' order.
			environ = append(environ, fmt.Sprintf("%s_%04d=%s", envName(list.name), i, entry))
			envOK = envOK && entry == strings.TrimSpace(entry)
		}
	}
	check := func(source string, args, environ []string) {
		got, err := Load(args, environ, io.Discard)
		if err != nil {
			t.Fatalf("entries %q / %q loaded from %s: %v", c.Exec, c.Webhook, source, err)
		}
		if !reflect.DeepEqual(got.Exec, c.Exec) || !reflect.DeepEqual(got.Webhook, c.Webhook) {
			t.Fatalf("entries from %s = %q / %q, want %q / %q", source, got.Exec, got.Webhook, c.Exec, c.Webhook)
		}
	}
	check("flags", flags, nil)
	if fileOK {
		path := filepath.Join(dir, "entries.conf")
		if err := os.WriteFile(path, []byte(fileText.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		check("a config file", []string{fuzzNodeName, "--config", path}, nil)
	}
	if envOK {
		check("the environment", []string{fuzzNodeName}, environ)
	}
}

// FuzzEnvEntry sets TASKD_EXEC (or a suffixed variable) to any value: the
// value is one entry, never split, so it loads exactly as the same entry
// given by flag, or the load fails for both.
func FuzzEnvEntry(f *testing.F) {
	f.Add("digest=cd jobs; ./send", "")
	f.Add("a=echo a\nb=echo b", "_1")
	f.Add(" a=x ; ", "_mail")
	f.Add("a", "_")
	f.Add("", "_2")
	f.Add("k=printf '%s\\n' \"$(cat)\"", "_z")
	f.Fuzz(func(t *testing.T, value, suffix string) {
		if strings.ContainsAny(suffix, "=\x00") || strings.Contains(value, "\x00") {
			return // no environment entry can hold these
		}
		variable := "TASKD_EXEC" + suffix
		fromEnv, envErr := Load([]string{fuzzNodeName}, []string{variable + "=" + value}, io.Discard)
		if suffix == "_" {
			if envErr == nil {
				t.Fatalf("%s accepted: a suffix needs at least one character", variable)
			}
			return
		}
		if suffix != "" && !strings.HasPrefix(suffix, "_") {
			return // another variable altogether: TestUnknownOption's business
		}
		entry := strings.TrimSpace(value)
		args := []string{fuzzNodeName}
		if entry != "" {
			args = append(args, "--exec", entry)
		}
		fromFlag, flagErr := Load(args, nil, io.Discard)
		if (envErr == nil) != (flagErr == nil) {
			t.Fatalf("%s=%q: env error %v, flag error %v", variable, value, envErr, flagErr)
		}
		if envErr == nil && !reflect.DeepEqual(fromEnv.Exec, fromFlag.Exec) {
			t.Fatalf("%s=%q loads %q, the flag %q", variable, value, fromEnv.Exec, fromFlag.Exec)
		}
		if envErr == nil && entry != "" && len(fromEnv.Exec) != 1 {
			t.Fatalf("%s=%q loads %d entries, want 1", variable, value, len(fromEnv.Exec))
		}
	})
}

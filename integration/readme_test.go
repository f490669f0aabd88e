//go:build unix

package integration

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's quick start, run as written. Its console blocks are a
// person's session: "$ " lines are typed in one shell (variables carry
// over) and the lines under one are what it prints. This test types every
// command that uses taskctl, in one bash, against a real taskd started as
// `make run` starts it (the Makefile's demo handler, on a host named vm),
// and compares each command's output with the lines the README shows
// under it, after readmeNormalize has replaced what differs from run to
// run (task ids, times, durations, fences and cursors) and folded the
// spacing of tables. "..." in the README stands for any lines. A command
// the README shows no output for must succeed, one whose shown output is a
// "taskctl: " error must fail. A read (get, runs, list, preview, ...) is
// run again until it prints what is shown (the README says "after a few
// seconds" where a run has to happen first), within a deadline; an update
// that lost a race is run again, as the README says. The events -f command,
// which runs until Ctrl-C, runs as a job of its own while the command the
// README says ran "in another terminal" is run, and gets SIGINT, as Ctrl-C
// sends it, once it has printed the lines shown.

// readmeStep is one typed command and the output shown under it.
type readmeStep struct {
	line int // in README.md
	cmd  string
	want []string
}

// quickStart returns the steps of the quick start's console blocks and
// the prose around them.
func quickStart(t *testing.T, readme string) ([]readmeStep, string) {
	t.Helper()
	start := strings.Index(readme, "\n## Quick start\n")
	if start < 0 {
		t.Fatal("README.md has no \"## Quick start\" section")
	}
	end := strings.Index(readme[start+1:], "\n## ")
	if end < 0 {
		t.Fatal("the quick start section does not end")
	}
	section := readme[start : start+1+end]
	first := strings.Count(readme[:start], "\n") + 1
	var steps []readmeStep
	in := false
	for i, l := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			in = !in && strings.TrimPrefix(l, "```") == "console"
		case !in:
		case strings.HasPrefix(l, "$ "):
			steps = append(steps, readmeStep{line: first + i, cmd: strings.TrimPrefix(l, "$ ")})
		case len(steps) > 0:
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
		}
	}
	return steps, section
}

var (
	readmeIDs   = regexp.MustCompile(`\b[0-9a-hjkmnp-tv-z]{26}\b`)
	readmeTimes = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	readmeDurs  = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h)\b`)
	readmeDots  = regexp.MustCompile(`\b\d+\.\d+\b`)
	readmeSpace = regexp.MustCompile(`\s+`)
)

// readmeNormalize replaces what differs from one run to the next.
func readmeNormalize(l string) string {
	l = readmeIDs.ReplaceAllString(l, "<id>")
	l = readmeTimes.ReplaceAllString(l, "<time>")
	l = readmeDurs.ReplaceAllString(l, "<dur>")
	l = readmeDots.ReplaceAllString(l, "<n.n>")
	return strings.TrimSpace(readmeSpace.ReplaceAllString(l, " "))
}

// readmeMatch reports whether got (lines) is what want shows, "..."
// standing for any lines.
func readmeMatch(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if readmeMatch(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && readmeNormalize(want[0]) == readmeNormalize(got[0]) && readmeMatch(want[1:], got[1:])
}

// readmeShell is one bash that the steps are typed into; its output
// (stdout and stderr) comes line by line on lines.
type readmeShell struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

const readmeEnd = "@@readme-step-end@@"

func startReadmeShell(t *testing.T, dir string, env []string, prelude string) *readmeShell {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir = dir
	cmd.Env = env
	// A group of its own, ended with the test: the shell and its jobs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sh := &readmeShell{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 1024)}
	go func() {
		defer close(sh.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			sh.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	sh.run(prelude)
	return sh
}

// run types cmd and returns what it printed and its exit status.
func (sh *readmeShell) run(cmd string) ([]string, int) {
	sh.t.Helper()
	if _, err := fmt.Fprintf(sh.stdin, "%s\n__rc=$?; echo; echo %s $__rc\n", cmd, readmeEnd); err != nil {
		sh.t.Fatalf("type %q: %v", cmd, err)
	}
	var out []string
	timeout := time.After(waitLong)
	for {
		select {
		case l, ok := <-sh.lines:
			if !ok {
				sh.t.Fatalf("the shell ended during %q; it printed:\n%s", cmd, strings.Join(out, "\n"))
			}
			if rest, ok := strings.CutPrefix(l, readmeEnd+" "); ok {
				var rc int
				fmt.Sscan(rest, &rc)
				for len(out) > 0 && out[len(out)-1] == "" {
					out = out[:len(out)-1]
				}
				return out, rc
			}
			out = append(out, l)
		case <-timeout:
			sh.t.Fatalf("%q did not end within %v; it printed:\n%s", cmd, waitLong, strings.Join(out, "\n"))
		}
	}
}

// readmeReads are the taskctl commands that change nothing, which the
// test may run again until they print what the README shows.
var readmeReads = regexp.MustCompile(`\btaskctl (-o json )?(get|runs|list|preview|nodes|identity|pauses|calendar (list|get))\b`)

// readmeOtherTerminal finds the command the prose says made the lines of
// events -f, typed in another terminal.
var readmeOtherTerminal = regexp.MustCompile("come from `(taskctl [^`]+)` in another terminal")

// readmeTyped reports whether the test types cmd: the commands that use
// taskctl and the assignments (log=$(mktemp -d)/...); not alias (the shell
// has a taskctl function) nor other programs (grpcurl).
func readmeTyped(cmd string) bool {
	if strings.HasPrefix(cmd, "alias ") {
		return false
	}
	return regexp.MustCompile(`\btaskctl\b`).MatchString(cmd) || regexp.MustCompile(`^[A-Za-z_]\w*=`).MatchString(cmd)
}

// TestReadmeQuickStart runs the README's quick start (see above).
func TestReadmeQuickStart(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	// RUN_EXEC = $(if ...,,--exec 'demo=...'): the handler of make run.
	m := regexp.MustCompile(`(?m)^RUN_EXEC = .*--exec '([^']+)'\)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile has no RUN_EXEC with an --exec")
	}
	demo := strings.ReplaceAll(string(m[1]), "$$", "$")
	steps, prose := quickStart(t, string(readme))
	other := readmeOtherTerminal.FindStringSubmatch(readmeSpace.ReplaceAllString(prose, " "))

	// Without the console, whose chart feed would be one more event
	// stream (readmeFollow counts them).
	p := startNode(t, nodeOptions{name: "vm", dataDir: t.TempDir(), extra: []string{"--exec", demo, "--console=false"}})
	env := append(childEnv(), "TASKCTL_ADDR="+p.listen)
	sh := startReadmeShell(t, t.TempDir(), env, fmt.Sprintf("taskctl() { %s \"$@\"; }", shellQuote(taskctlBin)))

	typed := 0
	for _, s := range steps {
		if !readmeTyped(s.cmd) {
			t.Logf("README.md:%d: not typed: %s", s.line, s.cmd)
			continue
		}
		typed++
		if strings.Contains(s.cmd, "events -f") {
			readmeFollow(t, sh, p, s, other)
			continue
		}
		wantFail := len(s.want) > 0 && strings.HasPrefix(s.want[0], "taskctl: ")
		// check runs the step once: nil when it did what the README shows.
		check := func() (bool, error) {
			out, rc := sh.run(s.cmd)
			if (rc != 0) == wantFail && (len(s.want) == 0 || readmeMatch(s.want, out)) {
				return false, nil
			}
			aborted := rc != 0 && !wantFail && strings.Contains(strings.Join(out, "\n"), "Aborted")
			return aborted, fmt.Errorf("README.md:%d: $ %s\nexit %d, printed:\n%s\nwant (exit %s):\n%s", s.line, s.cmd, rc,
				strings.Join(out, "\n"), map[bool]string{true: "non-zero", false: "0"}[wantFail], strings.Join(s.want, "\n"))
		}
		if readmeReads.MatchString(s.cmd) && !wantFail {
			eventually(t, waitLong, fmt.Sprintf("README.md:%d to print what it shows", s.line), func() error {
				_, err := check()
				return err
			})
			continue
		}
		for attempt := 1; ; attempt++ {
			again, err := check()
			if err == nil {
				break
			}
			if !again || attempt == 5 {
				t.Fatal(err)
			}
			// It lost a race with a run of the task: "run it again".
		}
	}
	if typed < 20 {
		t.Fatalf("typed %d commands of the quick start, want its taskctl session (20 or more)", typed)
	}
}

// readmeFollow runs an events -f step: as a job of its own whose output
// the test reads, the other terminal's command once the node feeds the
// job's stream, then Ctrl-C once the lines shown above "^C" are printed.
func readmeFollow(t *testing.T, sh *readmeShell, p *taskd, s readmeStep, other []string) {
	t.Helper()
	if other == nil {
		t.Fatalf("README.md:%d: events -f, but the prose names no command run \"in another terminal\"", s.line)
	}
	want := s.want
	if len(want) == 0 || want[len(want)-1] != "^C" {
		t.Fatalf("README.md:%d: the output of events -f does not end with ^C", s.line)
	}
	want = want[:len(want)-1]
	streams := func() float64 { return value(scrape(t, p.httpAddr), "taskd_event_streams") }
	before := streams()
	if before != 0 {
		t.Fatalf("taskd_event_streams %v before events -f, want 0", before)
	}
	// The command may end with a # comment: the group closes on a line of
	// its own.
	out, rc := sh.run(fmt.Sprintf("__out=$(mktemp); set -m; { %s\n} > \"$__out\" 2>&1 & __job=$!; set +m; echo \"$__out\"", s.cmd))
	if rc != 0 || len(out) != 1 {
		t.Fatalf("start %q as a job: exit %d, %q", s.cmd, rc, out)
	}
	file := out[0]
	eventually(t, waitLong, "the node to feed the events -f stream", func() error {
		if n := streams(); n != before+1 {
			return fmt.Errorf("taskd_event_streams %v, want %v", n, before+1)
		}
		return nil
	})
	if out, rc := sh.run(other[1]); rc != 0 {
		t.Fatalf("the other terminal's %q: exit %d\n%s", other[1], rc, strings.Join(out, "\n"))
	}
	var got []string
	eventually(t, waitLong, fmt.Sprintf("events -f to print %d lines", len(want)), func() error {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		got = strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(got) < len(want) || got[0] == "" {
			return fmt.Errorf("%d lines so far", len(got))
		}
		return nil
	})
	// Ctrl-C: SIGINT to the job's process group.
	if out, rc := sh.run(`kill -INT -- -$__job; wait $__job 2>/dev/null; true`); rc != 0 {
		t.Fatalf("Ctrl-C: exit %d\n%s", rc, strings.Join(out, "\n"))
	}
	eventually(t, waitLong, "the stream of events -f to end", func() error {
		if n := streams(); n != before {
			return fmt.Errorf("taskd_event_streams %v, want %v", n, before)
		}
		return nil
	})
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	got = strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if !readmeMatch(want, got) {
		t.Fatalf("README.md:%d: $ %s\nprinted:\n%s\nwant:\n%s", s.line, s.cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

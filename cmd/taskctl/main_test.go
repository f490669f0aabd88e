package main

import (
	"bytes"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind (a gRPC
// connection that was not closed, for instance).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// etcd's client (of the node in the end-to-end tests) keeps one
		// goroutine per process.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}

// runCLI calls run in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// freeAddr returns a 127.0.0.1 address where nothing listens: a port the
// kernel handed out and that was closed again.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // substrings of stdout
	}{
		{[]string{"help"}, append([]string{"Usage:", "-addr", "-timeout", "-output", "help"}, commandNames()...)},
		{[]string{"-h"}, commandNames()},
		{[]string{"--help"}, commandNames()},
		{[]string{"--addr", "x:1", "-h"}, commandNames()},
		{[]string{"help", "schedule"}, []string{"taskctl [global flags] schedule", "-scope", "-every", "-label", "-idempotency-key", "-output"}},
		{[]string{"schedule", "-h"}, []string{"-scope", "-payload-file", "-timeout-task", "-no-recovery", "-allow-overlap"}},
		{[]string{"schedule", "--identity", "a", "--help"}, []string{"-scope"}},
		{[]string{"get", "-h"}, []string{"taskctl [global flags] get --identity ID TASK_ID", "-identity", "-task"}},
		{[]string{"list", "-h"}, []string{"-page-size", "-all"}},
		{[]string{"runs", "-h"}, []string{"-identity", "-task"}},
		{[]string{"nodes", "-h"}, []string{"-o format"}},
		{[]string{"identity", "-h"}, []string{"identity ID"}},
		{[]string{"run-now", "-h"}, []string{"-identity"}},
		{[]string{"cancel", "-h"}, []string{"-identity"}},
		{[]string{"schedule", "-h"}, []string{"-cron EXPR", "-tz ZONE", "-on-startup", "-calendar NAME", "-misfire POLICY",
			"-backoff INITIAL[,MAX]", "-priority", "-max-attempts", "-f FILE", "-label k=v"}},
		{[]string{"help", "update"}, []string{"taskctl [global flags] update --identity ID TASK_ID", "-revision N", "-cron EXPR",
			"-on-startup", "-payload", "-data", "-no-labels", "-no-calendars", "-misfire"}},
		{[]string{"list", "-h"}, []string{"-state STATE", "-kind KIND", "-label k=v", "-node NODE", "every identity's"}},
		{[]string{"pause", "-h"}, []string{"pause --identity ID [TASK_ID] | --kind KIND", "-identity", "-kind", "-task"}},
		{[]string{"resume", "-h"}, []string{"resume --identity ID [TASK_ID] | --kind KIND", "-kind"}},
		{[]string{"pauses", "-h"}, []string{"taskctl [global flags] pauses", "-o format"}},
		{[]string{"preview", "-h"}, []string{"-cron EXPR", "-tz ZONE", "-from RFC3339", "-n N", "-calendar NAME", "-every"}},
		{[]string{"calendar", "-h"}, []string{"taskctl [global flags] calendar COMMAND", "create", "get", "list", "delete"}},
		{[]string{"help", "calendar"}, []string{"taskctl [global flags] calendar COMMAND", "create", "delete"}},
		{[]string{"calendar", "create", "-h"}, []string{"taskctl [global flags] calendar create NAME", "-weekly DAYS", "-dates DAYS", "-annual DAYS",
			"-monthly DAYS", "-daily WINDOW", "-invert", "-cron EXPR", "-tz ZONE", "-base NAME", "-description TEXT", "-replace", "-f FILE"}},
		{[]string{"help", "calendar", "get"}, []string{"taskctl [global flags] calendar get NAME"}},
		{[]string{"calendar", "list", "--help"}, []string{"taskctl [global flags] calendar list", "-o format"}},
		{[]string{"calendar", "delete", "-h"}, []string{"taskctl [global flags] calendar delete NAME"}},
		{[]string{"events", "-h"}, []string{"taskctl [global flags] events", "-identity ID", "-task TASK_ID", "-kind KIND", "-node NODE",
			"-type TYPES", "-cursor CURSOR", "-f\t", "-idle DUR"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != exitOK {
				t.Errorf("exit code = %d, want 0; stderr: %s", code, errOut)
			}
			if errOut != "" {
				t.Errorf("stderr = %q, want empty", errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func commandNames() []string {
	var names []string
	for _, c := range commands {
		names = append(names, c.Name)
	}
	return names
}

func TestUsageErrors(t *testing.T) {
	addr := freeAddr(t) // an accidental RPC would fail with exit 1, not 2
	sched := []string{"schedule", "--identity", "a", "--kind", "k", "--scope", "identity"}
	for _, tc := range []struct {
		name string
		args []string
		want string // substring of stderr
	}{
		{"no command", nil, "missing command"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown global flag", []string{"--bogus", "nodes"}, "-bogus"},
		{"bad output", []string{"-o", "yaml", "nodes"}, "flag -o"},
		{"bad output long", []string{"--output=xml", "nodes"}, "flag -output"},
		{"bad output after command", []string{"nodes", "-o", "xml"}, "flag -o"},
		{"bad timeout", []string{"--timeout", "soon", "nodes"}, "flag -timeout"},
		{"zero timeout", []string{"--timeout", "0s", "nodes"}, "--timeout"},
		{"timeout missing value", []string{"nodes", "--timeout"}, "-timeout"},
		{"global flag after command", []string{"nodes", "--addr", "x:1"}, "--addr goes before the command"},
		{"help unknown", []string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{"help unknown subcommand", []string{"help", "calendar", "frob"}, `unknown command "calendar frob"`},
		{"group without command", []string{"calendar"}, "taskctl: calendar: missing command: create, get, list, delete"},
		{"group unknown command", []string{"calendar", "frob"}, `taskctl: calendar: unknown command "frob": want create, get, list, delete`},
		{"group flag first", []string{"calendar", "--name", "x"}, `unknown command "--name"`},
		{"calendar create no name", []string{"calendar", "create", "--weekly", "SAT"}, "taskctl: calendar create: missing calendar NAME (see 'taskctl calendar create -h')"},
		{"calendar create no rule", []string{"calendar", "create", "c"}, "missing rule"},
		{"calendar create two rules", []string{"calendar", "create", "c", "--weekly", "SAT", "--cron", "* * * ? * *"}, "--weekly and --cron exclude each other"},
		{"calendar create wrapping window", []string{"calendar", "create", "night", "--daily", "22:00-06:00"}, "--daily 06:00-22:00 --invert"},
		{"calendar create bad date", []string{"calendar", "create", "c", "--dates", "2026-13-01"}, "flag --dates"},
		{"calendar create two names", []string{"calendar", "create", "c", "d", "--weekly", "SAT"}, `unexpected argument "d"`},
		{"calendar create file and flags", []string{"calendar", "create", "-f", "cal.json", "--weekly", "SAT"}, "--weekly cannot be combined with -f"},
		{"calendar create file missing", []string{"calendar", "create", "-f", "/nonexistent/cal.json"}, `invalid value "/nonexistent/cal.json" for flag -f`},
		{"calendar get no name", []string{"calendar", "get"}, "missing calendar NAME"},
		{"calendar delete two names", []string{"calendar", "delete", "a", "b"}, `unexpected argument "b"`},
		{"calendar list argument", []string{"calendar", "list", "x"}, `unexpected argument "x"`},
		{"events without cursor", []string{"events", "--identity", "alice"}, "taskctl: events: missing required flag --cursor"},
		{"events bad type", []string{"events", "-f", "--type", "FIRED,BOOM"}, `invalid value "BOOM" for flag --type`},
		{"events idle with follow", []string{"events", "-f", "--idle", "3s"}, "--idle"},
		{"events bad idle", []string{"events", "--cursor", "1.0", "--idle", "soon"}, "flag -idle"},
		{"events argument", []string{"events", "-f", "alice"}, `unexpected argument "alice"`},
		{"unknown command flag", []string{"get", "--identity", "a", "t1", "--bogus"}, "-bogus"},
		{"flag missing value", []string{"get", "t1", "--identity"}, "flag needs an argument: -identity"},
		{"get missing task", []string{"get", "--identity", "a"}, "missing task id"},
		{"get missing identity", []string{"get", "t1"}, "missing required flag --identity"},
		{"get two tasks", []string{"get", "--identity", "a", "t1", "t2"}, `unexpected argument "t2"`},
		{"get task twice", []string{"get", "--identity", "a", "--task", "t1", "t2"}, "task id given twice"},
		{"cancel missing task", []string{"cancel", "--identity", "a"}, "missing task id"},
		{"run-now missing identity", []string{"run-now", "--task", "t1"}, "--identity"},
		{"runs missing identity", []string{"runs", "t1"}, "--identity"},
		{"list bad state", []string{"list", "--state", "zombie"}, `invalid value "zombie" for flag --state`},
		{"list bad label", []string{"list", "--label", "team"}, "flag --label"},
		{"list bad page size without identity", []string{"list", "--page-size", "1001"}, "--page-size"},
		{"list bad page size", []string{"list", "--identity", "a", "--page-size", "-1"}, "--page-size"},
		{"list page size not a number", []string{"list", "--identity", "a", "--page-size", "ten"}, "-page-size"},
		{"list all and token", []string{"list", "--identity", "a", "--all", "--page-token", "x"}, "--page-token"},
		{"list argument", []string{"list", "--identity", "a", "extra"}, `unexpected argument "extra"`},
		{"nodes argument", []string{"nodes", "extra"}, `unexpected argument "extra"`},
		{"identity missing", []string{"identity"}, "missing identity"},
		{"identity two", []string{"identity", "a", "b"}, `unexpected argument "b"`},
		{"schedule missing scope", []string{"schedule", "--identity", "a", "--kind", "k"}, "missing required flag --scope"},
		{"schedule bad scope", append(slices.Clone(sched[:5]), "--scope", "cluster"), "--scope"},
		{"schedule missing kind", []string{"schedule", "--identity", "a", "--scope", "identity"}, "--kind"},
		{"schedule bad delay", append(slices.Clone(sched), "--delay", "5x"), "--delay"},
		{"schedule bad at", append(slices.Clone(sched), "--at", "tomorrow"), "--at"},
		{"schedule bad every", append(slices.Clone(sched), "--every", "often"), "--every"},
		{"schedule bad count", append(slices.Clone(sched), "--every", "1m", "--count", "x"), "-count"},
		{"schedule bad label", append(slices.Clone(sched), "--label", "novalue"), "--label"},
		{"schedule argument", append(slices.Clone(sched), "extra"), `unexpected argument "extra"`},
		{"schedule bad misfire", append(slices.Clone(sched), "--misfire", "later"), "flag --misfire"},
		{"schedule bad backoff", append(slices.Clone(sched), "--backoff", "1s,x"), "flag --backoff"},
		{"schedule tz without cron", append(slices.Clone(sched), "--tz", "Europe/Berlin"), "--tz needs --cron"},
		{"schedule file with flags", []string{"schedule", "-f", "tasks.json", "--kind", "k"}, "--kind cannot be combined with -f"},
		{"schedule file missing", []string{"schedule", "-f", "/nonexistent/tasks.json"}, `invalid value "/nonexistent/tasks.json" for flag -f`},
		{"schedule file empty name", []string{"schedule", "--file="}, "flag -f"},
		{"update missing identity", []string{"update", "t1", "--priority", "1"}, "missing required flag --identity"},
		{"update missing task", []string{"update", "--identity", "a", "--priority", "1"}, "missing task id"},
		{"update nothing", []string{"update", "--identity", "a", "t1"}, "nothing to update"},
		{"update only revision", []string{"update", "--identity", "a", "t1", "--revision", "3"}, "nothing to update"},
		{"update kind", []string{"update", "--identity", "a", "t1", "--kind", "k"}, "-kind"},
		{"update bad misfire", []string{"update", "--identity", "a", "t1", "--misfire", "x"}, "flag --misfire"},
		{"update labels and no labels", []string{"update", "--identity", "a", "t1", "--label", "a=b", "--no-labels"}, "--no-labels and --label"},
		{"update no trigger", []string{"update", "--identity", "a", "t1", "--tz", "UTC"}, "--tz needs --cron"},
		{"update bad cron", []string{"update", "--identity", "a", "t1", "--cron", " "}, "flag --cron"},
		{"update negative revision", []string{"update", "--identity", "a", "t1", "--revision", "-1", "--priority", "2"}, "flag --revision"},
		{"pause nothing", []string{"pause"}, "missing required flag --identity or --kind"},
		{"pause task without identity", []string{"pause", "t1"}, "missing required flag --identity or --kind"},
		{"pause kind and identity", []string{"pause", "--kind", "k", "--identity", "a"}, "--kind and --identity"},
		{"pause kind and task", []string{"pause", "--kind", "k", "t1"}, `unexpected argument "t1"`},
		{"pause two tasks", []string{"pause", "--identity", "a", "t1", "t2"}, `unexpected argument "t2"`},
		{"resume nothing", []string{"resume"}, "--identity or --kind"},
		{"resume kind and task flag", []string{"resume", "--kind", "k", "--task", "t1"}, "--kind and --task"},
		{"pauses argument", []string{"pauses", "x"}, `unexpected argument "x"`},
		{"preview no trigger", []string{"preview"}, "missing trigger"},
		{"preview zero count", []string{"preview", "--cron", "0 0 * * * ?", "-n", "0"}, "flag -n"},
		{"preview bad from", []string{"preview", "--cron", "0 0 * * * ?", "--from", "today"}, "flag --from"},
		{"preview on-startup", []string{"preview", "--on-startup"}, "-on-startup"},
		{"preview bad calendar", []string{"preview", "--every", "1h", "--calendar", ""}, "flag --calendar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--addr", addr}, tc.args...)
			if tc.args == nil {
				args = nil
			}
			code, out, errOut := runCLI(t, args...)
			if code != exitUsage {
				t.Errorf("exit code = %d, want %d; stderr: %s", code, exitUsage, errOut)
			}
			if out != "" {
				t.Errorf("stdout = %q, want empty", out)
			}
			if !strings.HasPrefix(errOut, "taskctl: ") || strings.Count(errOut, "\n") != 1 {
				t.Errorf("stderr is not one 'taskctl: ' line: %q", errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr = %q, want it to contain %q", errOut, tc.want)
			}
		})
	}
}

func TestUnavailable(t *testing.T) {
	addr := freeAddr(t)
	for _, args := range [][]string{
		{"nodes"},
		{"-o", "json", "nodes"},
		{"get", "--identity", "alice", "t1"},
		{"get", "t1", "--identity", "alice", "-o", "json"},
		{"cancel", "--identity", "alice", "--task", "t1"},
		{"run-now", "--identity", "alice", "t1"},
		{"runs", "--identity", "alice", "t1"},
		{"list", "--identity", "alice", "--all"},
		{"identity", "alice"},
		{"schedule", "--identity", "alice", "--kind", "echo", "--scope", "identity", "--delay", "1m"},
		{"schedule", "--identity", "alice", "--kind", "echo", "--scope", "identity", "--cron", "0 0 * * * ?", "--tz", "Europe/Berlin"},
		{"update", "--identity", "alice", "t1", "--priority", "3"},
		{"list", "--state", "dead", "--kind", "email"},
		{"pause", "--identity", "alice", "t1"},
		{"pause", "--identity", "alice"},
		{"pause", "--kind", "email"},
		{"resume", "--identity", "alice", "t1"},
		{"resume", "--kind", "email"},
		{"pauses"},
		{"preview", "--cron", "0 30 2 ? * MON-FRI", "--tz", "Europe/Berlin", "-n", "10"},
		{"calendar", "create", "weekend", "--weekly", "SAT,SUN"},
		{"calendar", "get", "weekend"},
		{"calendar", "list"},
		{"calendar", "delete", "weekend"},
		{"events", "--cursor", "1.0"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			start := time.Now()
			code, out, errOut := runCLI(t, append([]string{"--addr", addr, "--timeout", "2s"}, args...)...)
			elapsed := time.Since(start)
			if code != exitError {
				t.Errorf("exit code = %d, want %d; stderr: %s", code, exitError, errOut)
			}
			if out != "" {
				t.Errorf("stdout = %q, want empty", out)
			}
			cmd := args[0]
			if cmd == "-o" {
				cmd = args[2]
			}
			if cmd == "calendar" {
				cmd += " " + args[1]
			}
			if want := "taskctl: " + cmd + ": Unavailable: "; !strings.HasPrefix(errOut, want) {
				t.Errorf("stderr = %q, want prefix %q", errOut, want)
			}
			if !strings.Contains(errOut, addr) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("stderr = %q, want one line naming %s", errOut, addr)
			}
			if elapsed > 3*time.Second {
				t.Errorf("took %v, want within the 2s --timeout", elapsed)
			}
		})
	}
}

func TestAddrFromEnvironment(t *testing.T) {
	addr := freeAddr(t)
	t.Setenv(envAddr, addr)
	code, _, errOut := runCLI(t, "--timeout", "2s", "nodes")
	if code != exitError || !strings.Contains(errOut, "Unavailable") || !strings.Contains(errOut, addr) {
		t.Errorf("exit %d, stderr %q: want exit 1, Unavailable at %s from %s", code, errOut, addr, envAddr)
	}
	// --addr overrides the environment.
	other := freeAddr(t)
	code, _, errOut = runCLI(t, "--addr", other, "--timeout", "2s", "nodes")
	if code != exitError || !strings.Contains(errOut, other) {
		t.Errorf("exit %d, stderr %q: want exit 1 naming %s", code, errOut, other)
	}
}

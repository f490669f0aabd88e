package taskflags

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/cli/cmdline"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// parseSchedule parses schedule's flags from args (after the required
// --identity alice --kind echo) and builds the request.
func parseSchedule(t *testing.T, args ...string) (*taskdv1.ScheduleTaskRequest, error) {
	t.Helper()
	var o ScheduleOptions
	fs := cmdline.NewFlagSet("schedule")
	DefineScheduleFlags(fs, &o)
	pos, err := cmdline.ParseInterspersed(fs, append([]string{"--identity", "alice", "--kind", "echo"}, args...))
	if err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	if len(pos) > 0 {
		t.Fatalf("parsing %q: positional arguments %q", args, pos)
	}
	return BuildScheduleRequest(o, testNow)
}

func spec(scope taskdv1.Scope, triggers []*taskdv1.Trigger, edit ...func(*taskdv1.TaskSpec)) *taskdv1.ScheduleTaskRequest {
	s := &taskdv1.TaskSpec{Identity: "alice", Kind: "echo", Scope: scope, Triggers: triggers}
	for _, e := range edit {
		e(s)
	}
	return &taskdv1.ScheduleTaskRequest{Task: s}
}

func TestBuildScheduleRequest(t *testing.T) {
	const id = taskdv1.Scope_SCOPE_IDENTITY
	payloadFile := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(payloadFile, []byte("from\x00file"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want *taskdv1.ScheduleTaskRequest
	}{
		// No trigger flag: no trigger in the request; the server gives the
		// task its default (once, now).
		{"once now", []string{"--scope", "identity"}, spec(id, nil)},
		{"scope every-node", []string{"--scope", "every-node"}, spec(taskdv1.Scope_SCOPE_EVERY_NODE, nil)},
		{"scope upper case", []string{"--scope", "EVERY_NODE"}, spec(taskdv1.Scope_SCOPE_EVERY_NODE, nil)},
		{"once delay", []string{"--scope", "identity", "--delay", "90s"},
			spec(id, once(&taskdv1.OnceTrigger{Delay: durationpb.New(90 * time.Second)}))},
		{"once zero delay", []string{"--scope", "identity", "--delay", "0s"},
			spec(id, once(&taskdv1.OnceTrigger{Delay: durationpb.New(0)}))},
		{"once at", []string{"--scope", "identity", "--at", "2026-05-01T10:00:00Z"},
			spec(id, once(&taskdv1.OnceTrigger{At: ts("2026-05-01T10:00:00Z")}))},
		{"once at with offset", []string{"--scope", "identity", "--at", "2026-05-01T12:00:00.5+02:00"},
			spec(id, once(&taskdv1.OnceTrigger{At: ts("2026-05-01T10:00:00.5Z")}))},
		{"every", []string{"--scope", "identity", "--every", "1m"},
			spec(id, periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Minute)}))},
		{"every 1ms", []string{"--scope", "identity", "--every", "1ms"},
			spec(id, periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Millisecond)}))},
		{"every start count until", []string{"--scope", "identity", "--every", "1h", "--start", "2026-05-01T00:00:00Z",
			"--count", "5", "--until", "2026-05-02T00:00:00Z"},
			spec(id, periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Hour), Start: ts("2026-05-01T00:00:00Z"),
				Count: 5, End: ts("2026-05-02T00:00:00Z")}))},
		{"every with jitter", []string{"--scope", "identity", "--every", "1h", "--jitter", "10m"},
			func() *taskdv1.ScheduleTaskRequest {
				r := spec(id, periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Hour)}))
				r.Task.Triggers[0].Jitter = durationpb.New(10 * time.Minute)
				return r
			}()},
		{"every count", []string{"--scope", "identity", "--every", "10s", "--count", "3"},
			spec(id, periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(10 * time.Second), Count: 3}))},
		{"every until", []string{"--scope", "identity", "--every", "10s", "--until", "2026-05-02T00:00:00Z"},
			spec(id, periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(10 * time.Second), End: ts("2026-05-02T00:00:00Z")}))},
		{"every with delay sets start", []string{"--scope", "identity", "--every", "1m", "--delay", "30s"},
			spec(id, periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Minute), Start: timestamppb.New(testNow.Add(30 * time.Second))}))},
		{"every with at sets start", []string{"--scope", "identity", "--at", "2026-05-01T00:00:00Z", "--every", "1m"},
			spec(id, periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Minute), Start: ts("2026-05-01T00:00:00Z")}))},
		{"labels", []string{"--scope", "identity", "--label", "team=core", "--label", "expr=a=b", "--label", "empty="},
			spec(id, nil, func(s *taskdv1.TaskSpec) {
				s.Labels = map[string]string{"team": "core", "expr": "a=b", "empty": ""}
			})},
		{"payload and data", []string{"--scope", "identity", "--payload", "hello", "--data", "state"},
			spec(id, nil, func(s *taskdv1.TaskSpec) {
				s.Payload, s.Data = []byte("hello"), []byte("state")
			})},
		{"payload file", []string{"--scope", "identity", "--payload-file", payloadFile},
			spec(id, nil, func(s *taskdv1.TaskSpec) { s.Payload = []byte("from\x00file") })},
		{"settings", []string{"--scope", "identity", "--non-durable", "--priority", "-5", "--max-attempts", "3",
			"--timeout-task", "30s", "--no-recovery", "--allow-overlap", "--idempotency-key", "k1"},
			spec(id, nil, func(s *taskdv1.TaskSpec) {
				s.NonDurable, s.Priority, s.MaxAttempts = true, -5, 3
				s.Timeout = durationpb.New(30 * time.Second)
				s.RequestsRecovery = proto.Bool(false)
				s.AllowOverlap, s.IdempotencyKey = true, "k1"
			})},
		{"cron in a zone", []string{"--scope", "identity", "--cron", "0 30 2 ? * MON-FRI", "--tz", "Europe/Berlin"},
			spec(id, cronTriggers(&taskdv1.CronTrigger{Expression: "0 30 2 ? * MON-FRI", TimeZone: "Europe/Berlin"}))},
		{"two crons with a window", []string{"--scope", "identity", "--cron", "0 0 9 * * ?", "--cron", "0 0 17 * * ?",
			"--start", "2026-05-01T00:00:00Z", "--until", "2026-06-01T00:00:00Z"},
			spec(id, cronTriggers(
				&taskdv1.CronTrigger{Expression: "0 0 9 * * ?", Start: ts("2026-05-01T00:00:00Z"), End: ts("2026-06-01T00:00:00Z")},
				&taskdv1.CronTrigger{Expression: "0 0 17 * * ?", Start: ts("2026-05-01T00:00:00Z"), End: ts("2026-06-01T00:00:00Z")}))},
		{"on start-up alone", []string{"--scope", "every-node", "--on-startup"},
			spec(taskdv1.Scope_SCOPE_EVERY_NODE, []*taskdv1.Trigger{onStartup()})},
		{"cron, on start-up and every combine", []string{"--scope", "identity", "--cron", "0 0 * * * ?", "--on-startup", "--every", "1h"},
			spec(id, append(append(periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Hour)}),
				cronTriggers(&taskdv1.CronTrigger{Expression: "0 0 * * * ?"})...), onStartup()))},
		{"once at and cron", []string{"--scope", "identity", "--at", "2026-05-01T10:00:00Z", "--cron", "0 0 * * * ?"},
			spec(id, append(once(&taskdv1.OnceTrigger{At: ts("2026-05-01T10:00:00Z")}), cronTriggers(&taskdv1.CronTrigger{Expression: "0 0 * * * ?"})...))},
		{"cron start with every at", []string{"--scope", "identity", "--every", "1m", "--at", "2026-05-01T00:00:00Z",
			"--cron", "0 0 * * * ?", "--until", "2026-05-02T00:00:00Z"},
			spec(id, append(periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Minute), Start: ts("2026-05-01T00:00:00Z"), End: ts("2026-05-02T00:00:00Z")}),
				cronTriggers(&taskdv1.CronTrigger{Expression: "0 0 * * * ?", End: ts("2026-05-02T00:00:00Z")})...))},
		{"misfire, backoff and calendars", []string{"--scope", "identity", "--cron", "0 0 * * * ?", "--misfire", "Fire-All",
			"--backoff", "1s,10m", "--calendar", "holidays", "--calendar", "weekends"},
			spec(id, cronTriggers(&taskdv1.CronTrigger{Expression: "0 0 * * * ?"}), func(s *taskdv1.TaskSpec) {
				s.Misfire = taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL
				s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(time.Second), Max: durationpb.New(10 * time.Minute)}
				s.Calendars = []string{"holidays", "weekends"}
			})},
		{"backoff initial only", []string{"--scope", "identity", "--backoff", "250ms"},
			spec(id, nil, func(s *taskdv1.TaskSpec) {
				s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(250 * time.Millisecond)}
			})},
		{"misfire enum name", []string{"--scope", "identity", "--misfire", "MISFIRE_POLICY_SKIP"},
			spec(id, nil, func(s *taskdv1.TaskSpec) { s.Misfire = taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSchedule(t, tc.args...)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !proto.Equal(tc.want, got) {
				t.Errorf("request mismatch:\n got: %v\nwant: %v", got, tc.want)
			}
		})
	}
}

func TestBuildScheduleRequestErrors(t *testing.T) {
	scoped := func(args ...string) []string { return append([]string{"--scope", "identity"}, args...) }
	for _, tc := range []struct {
		name string
		args []string
		want string // substring of the error: names the flag
	}{
		{"scope missing", nil, "missing required flag --scope"},
		{"scope bad", []string{"--scope", "cluster"}, `invalid value "cluster" for flag --scope`},
		{"delay bad", scoped("--delay", "soon"), `flag --delay`},
		{"delay negative", scoped("--delay", "-1s"), `flag --delay: must be positive`},
		{"at bad", scoped("--at", "2026-05-01 10:00"), `flag --at: want an RFC3339 time`},
		{"at and delay", scoped("--at", "2026-05-01T10:00:00Z", "--delay", "1m"), "--delay and --at"},
		{"every bad", scoped("--every", "often"), "flag --every"},
		{"every zero", scoped("--every", "0s"), "flag --every: must be positive"},
		{"every below 1ms", scoped("--every", "500us"), "flag --every: must be at least 1ms"},
		{"start bad", scoped("--every", "1m", "--start", "now"), "flag --start"},
		{"until bad", scoped("--every", "1m", "--until", "later"), "flag --until"},
		{"until before start", scoped("--every", "1m", "--start", "2026-05-02T00:00:00Z", "--until", "2026-05-01T00:00:00Z"), "flag --until: before the first fire time"},
		{"count negative", scoped("--every", "1m", "--count", "-1"), "flag --count"},
		{"start without every", scoped("--start", "2026-05-01T00:00:00Z"), "--start needs --every"},
		{"count without every", scoped("--count", "3"), "--count needs --every"},
		{"until without every", scoped("--until", "2026-05-01T00:00:00Z"), "--until needs --every"},
		{"start with delay", scoped("--every", "1m", "--start", "2026-05-01T00:00:00Z", "--delay", "1s"), "--start excludes --delay and --at"},
		{"label without equals", scoped("--label", "team"), `invalid value "team" for flag --label`},
		{"label empty key", scoped("--label", "=x"), "flag --label"},
		{"label twice", scoped("--label", "a=1", "--label", "a=2"), `key "a" given twice`},
		{"payload and file", scoped("--payload", "x", "--payload-file", "f"), "--payload and --payload-file"},
		{"payload file missing", scoped("--payload-file", filepath.Join(t.TempDir(), "nope")), "flag --payload-file"},
		{"max attempts negative", scoped("--max-attempts", "-1"), "flag --max-attempts"},
		{"priority out of range", scoped("--priority", strconv.FormatInt(1<<40, 10)), "flag --priority"},
		{"timeout-task zero", scoped("--timeout-task", "0s"), "flag --timeout-task: must be positive"},
		{"timeout-task bad", scoped("--timeout-task", "long"), "flag --timeout-task"},
		{"cron empty", scoped("--cron", ""), "flag --cron"},
		{"tz without cron", scoped("--tz", "UTC"), "--tz needs --cron"},
		{"jitter without every or cron", scoped("--delay", "1m", "--jitter", "10s"), "--jitter needs --every or --cron"},
		{"jitter bad", scoped("--every", "1m", "--jitter", "a bit"), "flag --jitter"},
		{"jitter negative", scoped("--every", "1m", "--jitter", "-1s"), "flag --jitter: must be positive"},
		{"tz with every only", scoped("--every", "1m", "--tz", "UTC"), "--tz needs --cron"},
		{"count with cron only", scoped("--cron", "0 0 * * * ?", "--count", "3"), "--count needs --every"},
		{"cron until before start", scoped("--cron", "0 0 * * * ?", "--start", "2026-05-02T00:00:00Z", "--until", "2026-05-01T00:00:00Z"),
			"flag --until: before --start"},
		{"misfire unknown", scoped("--misfire", "sometimes"), `invalid value "sometimes" for flag --misfire`},
		{"backoff not a duration", scoped("--backoff", "soon"), `invalid value "soon" for flag --backoff`},
		{"backoff zero", scoped("--backoff", "0s"), "flag --backoff"},
		{"backoff max below initial", scoped("--backoff", "1m,1s"), "flag --backoff: MAX is shorter than INITIAL"},
		{"backoff three parts", scoped("--backoff", "1s,2s,3s"), "flag --backoff"},
		{"calendar twice", scoped("--calendar", "a", "--calendar", "a"), `invalid value "a" for flag --calendar: given twice`},
		{"calendar empty", scoped("--calendar", ""), "flag --calendar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := parseSchedule(t, tc.args...)
			if err == nil {
				t.Fatalf("no error; request %v", req)
			}
			var ue *cmdline.UsageError
			if !errors.As(err, &ue) {
				t.Errorf("error %v (%T) is not a usage error", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestBuildScheduleRequestRequired(t *testing.T) {
	for _, tc := range []struct {
		o    ScheduleOptions
		want string
	}{
		{ScheduleOptions{Kind: "k", Scope: "identity"}, "missing required flag --identity"},
		{ScheduleOptions{Identity: "a", Scope: "identity"}, "missing required flag --kind"},
		{ScheduleOptions{Identity: "a", Kind: "k"}, "missing required flag --scope"},
	} {
		if _, err := BuildScheduleRequest(tc.o, testNow); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("BuildScheduleRequest(%+v) error = %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestParseTaskSpecs(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string // identities of the tasks
	}{
		{"array", `[{"identity": "a", "kind": "k"}, {"identity": "b", "kind": "k", "scope": "SCOPE_IDENTITY"}]`, []string{"a", "b"}},
		{"object", `{"tasks": [{"identity": "a", "kind": "k"}]}`, []string{"a"}},
		{"proto field names and spaces", "\n  [{\"identity\": \"a\", \"idempotency_key\": \"x\"}]\n", []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specs, err := parseTaskSpecs([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range specs {
				got = append(got, s.GetIdentity())
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("identities %q, want %q", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		in, want string
	}{
		{"", "empty"},
		{"[]", "no task"},
		{`{"tasks": []}`, "no task"},
		{`[{"identity": "a"}, {"bogus": 1}]`, "tasks[1]"},
		{`[{"identity": "a"}`, "not a JSON array"},
		{`{"task": {}}`, "not a {\"tasks\": [...]} object"},
		{`"a"`, "want a JSON array"},
	} {
		if specs, err := parseTaskSpecs([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseTaskSpecs(%q) = %v, %v; want an error containing %q", tc.in, specs, err, tc.want)
		}
	}
}

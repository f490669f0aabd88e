package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// storedTask is a task as GetTask returns it, for the update tests.
func storedTask() *taskdv1.Task {
	return &taskdv1.Task{
		Id: "t1",
		Spec: &taskdv1.TaskSpec{
			Identity: "alice", Kind: "echo", Scope: taskdv1.Scope_SCOPE_IDENTITY,
			Payload: []byte("old"), Data: []byte("handler state"),
			Triggers:         periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Minute), Start: ts("2026-05-01T00:00:00Z")}),
			Priority:         2,
			MaxAttempts:      4,
			Backoff:          &taskdv1.Backoff{Initial: durationpb.New(time.Second)},
			Timeout:          durationpb.New(time.Minute),
			Misfire:          taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP,
			RequestsRecovery: proto.Bool(true),
			Calendars:        []string{"holidays"},
			Labels:           map[string]string{"team": "core"},
			IdempotencyKey:   "k1",
		},
		State:    taskdv1.TaskState_TASK_STATE_SCHEDULED,
		Revision: 7,
	}
}

// parseUpdate parses update's flags from args and applies them to
// storedTask.
func parseUpdate(t *testing.T, args ...string) (*taskdv1.UpdateTaskRequest, error) {
	t.Helper()
	var o updateOptions
	fs := newFlagSet("update")
	defineUpdateFlags(fs, &o)
	if _, err := parseInterspersed(fs, append([]string{"--identity", "alice", "t1"}, args...)); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	edit, err := buildUpdate(o, func(name string) bool { return flagGiven(fs, name) }, testNow)
	if err != nil {
		return nil, err
	}
	return edit(storedTask())
}

func TestBuildUpdate(t *testing.T) {
	// want returns the request that keeps everything of storedTask but its
	// data, with edit applied.
	want := func(rev int64, edit func(*taskdv1.TaskSpec)) *taskdv1.UpdateTaskRequest {
		s := storedTask().Spec
		s.Data = nil
		edit(s)
		return &taskdv1.UpdateTaskRequest{Identity: "alice", TaskId: "t1", Spec: s, Revision: rev}
	}
	for _, tc := range []struct {
		name string
		args []string
		want *taskdv1.UpdateTaskRequest
	}{
		{"priority", []string{"--priority", "9"}, want(7, func(s *taskdv1.TaskSpec) { s.Priority = 9 })},
		{"priority zero", []string{"--priority", "0"}, want(7, func(s *taskdv1.TaskSpec) { s.Priority = 0 })},
		{"stale revision given", []string{"--priority", "9", "--revision", "3"}, want(3, func(s *taskdv1.TaskSpec) { s.Priority = 9 })},
		{"cron replaces the triggers", []string{"--cron", "0 30 2 ? * MON-FRI", "--tz", "Europe/Berlin"},
			want(7, func(s *taskdv1.TaskSpec) {
				s.Triggers = cronTriggers(&taskdv1.CronTrigger{Expression: "0 30 2 ? * MON-FRI", TimeZone: "Europe/Berlin"})
			})},
		{"on start-up and once", []string{"--on-startup", "--delay", "1m"},
			want(7, func(s *taskdv1.TaskSpec) {
				s.Triggers = append(once(&taskdv1.OnceTrigger{Delay: durationpb.New(time.Minute)}), onStartup())
			})},
		{"labels replaced", []string{"--label", "app=x", "--label", "tier=1"},
			want(7, func(s *taskdv1.TaskSpec) { s.Labels = map[string]string{"app": "x", "tier": "1"} })},
		{"no labels", []string{"--no-labels"}, want(7, func(s *taskdv1.TaskSpec) { s.Labels = nil })},
		{"calendars replaced", []string{"--calendar", "weekends"}, want(7, func(s *taskdv1.TaskSpec) { s.Calendars = []string{"weekends"} })},
		{"no calendars", []string{"--no-calendars"}, want(7, func(s *taskdv1.TaskSpec) { s.Calendars = nil })},
		{"payload and data", []string{"--payload", "new", "--data", "fresh"},
			want(7, func(s *taskdv1.TaskSpec) { s.Payload, s.Data = []byte("new"), []byte("fresh") })},
		{"empty payload clears it", []string{"--payload="}, want(7, func(s *taskdv1.TaskSpec) { s.Payload = nil })},
		{"misfire back to default", []string{"--misfire", "default"},
			want(7, func(s *taskdv1.TaskSpec) { s.Misfire = taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED })},
		{"misfire once-now", []string{"--misfire", "ONCE_NOW"},
			want(7, func(s *taskdv1.TaskSpec) { s.Misfire = taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW })},
		{"backoff and attempts", []string{"--backoff", "2s,1m", "--max-attempts", "10"},
			want(7, func(s *taskdv1.TaskSpec) {
				s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(2 * time.Second), Max: durationpb.New(time.Minute)}
				s.MaxAttempts = 10
			})},
		{"backoff back to default", []string{"--backoff="}, want(7, func(s *taskdv1.TaskSpec) { s.Backoff = nil })},
		{"timeout and no recovery", []string{"--timeout-task", "90s", "--no-recovery"},
			want(7, func(s *taskdv1.TaskSpec) {
				s.Timeout = durationpb.New(90 * time.Second)
				s.RequestsRecovery = proto.Bool(false)
			})},
		{"recovery back on", []string{"--no-recovery=false"}, want(7, func(s *taskdv1.TaskSpec) { s.RequestsRecovery = nil })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseUpdate(t, tc.args...)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !proto.Equal(tc.want, got) {
				t.Errorf("request mismatch:\n got: %v\nwant: %v", got, tc.want)
			}
		})
	}
}

func TestBuildUpdateErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"count alone", []string{"--count", "3"}, "--count needs --every"},
		{"start alone", []string{"--start", "2026-05-01T00:00:00Z"}, "--start needs --every or --cron"},
		{"on-startup false", []string{"--on-startup=false"}, "make no trigger"},
		{"bad backoff", []string{"--backoff", "x"}, "flag --backoff"},
		{"labels both ways", []string{"--no-labels", "--label", "a=b"}, "--no-labels and --label"},
		{"calendars both ways", []string{"--calendar", "a", "--no-calendars"}, "--no-calendars and --calendar"},
		{"bad label", []string{"--label", "a"}, "flag --label"},
		{"zero timeout", []string{"--timeout-task", "0s"}, "flag --timeout-task"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := parseUpdate(t, tc.args...)
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want a usage error containing %q", req, err, tc.want)
			}
		})
	}
}

func TestBuildPreviewRequest(t *testing.T) {
	parse := func(t *testing.T, args ...string) (*taskdv1.PreviewTriggersRequest, error) {
		t.Helper()
		var o previewOptions
		fs := newFlagSet("preview")
		definePreviewFlags(fs, &o)
		if _, err := parseInterspersed(fs, args); err != nil {
			t.Fatalf("parsing %q: %v", args, err)
		}
		return buildPreviewRequest(o, testNow)
	}
	for _, tc := range []struct {
		name string
		args []string
		want *taskdv1.PreviewTriggersRequest
	}{
		{"cron in a zone", []string{"--cron", "0 30 2 ? * MON-FRI", "--tz", "Europe/Berlin", "-n", "10"},
			&taskdv1.PreviewTriggersRequest{Count: 10, Triggers: cronTriggers(&taskdv1.CronTrigger{Expression: "0 30 2 ? * MON-FRI", TimeZone: "Europe/Berlin"})}},
		{"default count", []string{"--cron", "0 0 * * * ?"},
			&taskdv1.PreviewTriggersRequest{Count: 10, Triggers: cronTriggers(&taskdv1.CronTrigger{Expression: "0 0 * * * ?"})}},
		{"from and calendars", []string{"--cron", "0 0 * * * ?", "--from", "2026-12-01T00:00:00Z", "--calendar", "a", "--calendar", "b", "-n", "3"},
			&taskdv1.PreviewTriggersRequest{Count: 3, From: ts("2026-12-01T00:00:00Z"), Calendars: []string{"a", "b"},
				Triggers: cronTriggers(&taskdv1.CronTrigger{Expression: "0 0 * * * ?"})}},
		{"every with start", []string{"--every", "90m", "--start", "2026-12-01T00:00:00Z", "-n", "1000"},
			&taskdv1.PreviewTriggersRequest{Count: 1000, Triggers: periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(90 * time.Minute), Start: ts("2026-12-01T00:00:00Z")})}},
		{"every with delay counts from --from", []string{"--every", "1h", "--delay", "30m", "--from", "2026-12-01T00:00:00Z"},
			&taskdv1.PreviewTriggersRequest{Count: 10, From: ts("2026-12-01T00:00:00Z"),
				Triggers: periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Hour), Start: ts("2026-12-01T00:30:00Z")})}},
		{"at", []string{"--at", "2026-12-24T18:00:00+01:00"},
			&taskdv1.PreviewTriggersRequest{Count: 10, Triggers: once(&taskdv1.OnceTrigger{At: ts("2026-12-24T17:00:00Z")})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(t, tc.args...)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !proto.Equal(tc.want, got) {
				t.Errorf("request mismatch:\n got: %v\nwant: %v", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "missing trigger"},
		{[]string{"--cron", "0 0 * * * ?", "-n", "1001"}, "flag -n"},
		{[]string{"--cron", "0 0 * * * ?", "-n", "-1"}, "flag -n"},
		{[]string{"--cron", "0 0 * * * ?", "--from", "2026-12-01"}, "flag --from"},
		{[]string{"--every", "1h", "--calendar", "a", "--calendar", "a"}, "flag --calendar"},
	} {
		if req, err := parse(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("preview %q: %v, %v; want an error containing %q", tc.args, req, err, tc.want)
		}
	}
}

func TestBuildListRequest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		identity string
		states   []string
		kind     string
		labels   []string
		node     string
		want     *taskdv1.ListTasksRequest
	}{
		{name: "nothing: the cluster", want: &taskdv1.ListTasksRequest{}},
		{name: "identity", identity: "alice", want: &taskdv1.ListTasksRequest{Identity: "alice"}},
		{name: "dead emails", states: []string{"dead"}, kind: "email",
			want: &taskdv1.ListTasksRequest{Kind: "email", States: []taskdv1.TaskState{taskdv1.TaskState_TASK_STATE_DEAD}}},
		{name: "states in every spelling", states: []string{"Paused", "TASK_STATE_RETRYING", "canceled", "PAUSED"},
			want: &taskdv1.ListTasksRequest{States: []taskdv1.TaskState{taskdv1.TaskState_TASK_STATE_PAUSED,
				taskdv1.TaskState_TASK_STATE_RETRYING, taskdv1.TaskState_TASK_STATE_CANCELED}}},
		{name: "labels and node", labels: []string{"team=core", "tier="}, node: "node-a",
			want: &taskdv1.ListTasksRequest{Node: "node-a", Labels: map[string]string{"team": "core", "tier": ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := buildListRequest(tc.identity, tc.states, tc.kind, tc.labels, tc.node, 0, "")
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(tc.want, got) {
				t.Errorf("request mismatch:\n got: %v\nwant: %v", got, tc.want)
			}
		})
	}
}

func TestParseState(t *testing.T) {
	for in, want := range map[string]taskdv1.TaskState{
		"dead": taskdv1.TaskState_TASK_STATE_DEAD, "DEAD": taskdv1.TaskState_TASK_STATE_DEAD,
		"scheduled": taskdv1.TaskState_TASK_STATE_SCHEDULED, "Running": taskdv1.TaskState_TASK_STATE_RUNNING,
		"retrying": taskdv1.TaskState_TASK_STATE_RETRYING, "completed": taskdv1.TaskState_TASK_STATE_COMPLETED,
		"canceled": taskdv1.TaskState_TASK_STATE_CANCELED, "paused": taskdv1.TaskState_TASK_STATE_PAUSED,
		"TASK_STATE_PAUSED": taskdv1.TaskState_TASK_STATE_PAUSED, "task-state-dead": taskdv1.TaskState_TASK_STATE_DEAD,
	} {
		if got, err := parseState(in); err != nil || got != want {
			t.Errorf("parseState(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "unspecified", "TASK_STATE_UNSPECIFIED", "cancelled", "7"} {
		if got, err := parseState(in); err == nil {
			t.Errorf("parseState(%q) = %v, want an error", in, got)
		}
	}
}

func TestParseMisfire(t *testing.T) {
	for in, want := range map[string]taskdv1.MisfirePolicy{
		"":                             taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED,
		"default":                      taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED,
		"once-now":                     taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
		"Once_Now":                     taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
		"fire-once-now":                taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
		"MISFIRE_POLICY_FIRE_ONCE_NOW": taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
		"skip":                         taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP,
		"SKIP":                         taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP,
		"fire-all":                     taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL,
		"MISFIRE_POLICY_FIRE_ALL":      taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL,
	} {
		if got, err := parseMisfire(in); err != nil || got != want {
			t.Errorf("parseMisfire(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"now", "all", "fire", "1"} {
		if got, err := parseMisfire(in); err == nil {
			t.Errorf("parseMisfire(%q) = %v, want an error", in, got)
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

func TestChunkError(t *testing.T) {
	for _, tc := range []struct {
		name            string
		err             error
		off, end, total int
		code            codes.Code
		msg             string
	}{
		{"one call", status.Error(codes.InvalidArgument, "tasks[3].kind: no node handles kind \"x\""), 0, 10, 10,
			codes.InvalidArgument, "tasks[3].kind: no node handles kind \"x\""},
		{"first of several", status.Error(codes.InvalidArgument, "tasks[3].kind: bad"), 0, 100, 250,
			codes.InvalidArgument, "tasks[3].kind: bad (in the call with tasks[0] to tasks[99] of 250)"},
		{"third call", status.Error(codes.InvalidArgument, "tasks[7].triggers[0].cron.expression: bad"), 200, 250, 250,
			codes.InvalidArgument, "tasks[207].triggers[0].cron.expression: bad (in the call with tasks[200] to tasks[249] of 250; the 200 tasks before it were scheduled, their ids are printed)"},
		{"no field", status.Error(codes.Unavailable, "etcd is down"), 100, 200, 250,
			codes.Unavailable, "etcd is down (in the call with tasks[100] to tasks[199] of 250; the 100 tasks before it were scheduled, their ids are printed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := status.Convert(chunkError(tc.err, tc.off, tc.end, tc.total))
			if st.Code() != tc.code || st.Message() != tc.msg {
				t.Errorf("got %v %q\nwant %v %q", st.Code(), st.Message(), tc.code, tc.msg)
			}
		})
	}
	plain := errors.New("plain")
	if got := chunkError(plain, 0, 1, 1); got != plain {
		t.Errorf("a non-gRPC error became %v", got)
	}
}

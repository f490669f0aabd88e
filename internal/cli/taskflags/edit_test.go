package taskflags

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/internal/cli/cmdline"
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
	var o UpdateOptions
	fs := cmdline.NewFlagSet("update")
	DefineUpdateFlags(fs, &o)
	if _, err := cmdline.ParseInterspersed(fs, append([]string{"--identity", "alice", "t1"}, args...)); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	edit, err := BuildUpdate(o, func(name string) bool { return cmdline.FlagGiven(fs, name) }, testNow)
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
			var ue *cmdline.UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want a usage error containing %q", req, err, tc.want)
			}
		})
	}
}

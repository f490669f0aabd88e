package taskflags

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/internal/cli/cmdline"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func TestBuildPreviewRequest(t *testing.T) {
	parse := func(t *testing.T, args ...string) (*taskdv1.PreviewTriggersRequest, error) {
		t.Helper()
		var o PreviewOptions
		fs := cmdline.NewFlagSet("preview")
		DefinePreviewFlags(fs, &o)
		if _, err := cmdline.ParseInterspersed(fs, args); err != nil {
			t.Fatalf("parsing %q: %v", args, err)
		}
		return BuildPreviewRequest(o, testNow)
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
			got, err := BuildListRequest(tc.identity, tc.states, tc.kind, tc.labels, tc.node, 0, "")
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

package render

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func TestFormatEvent(t *testing.T) {
	at := timestamppb.New(time.Date(2026, 11, 30, 1, 17, 49, 123456789, time.FixedZone("+01", 3600)))
	for _, tc := range []struct {
		name string
		ev   *taskdv1.Event
		want string
	}{
		{"scheduled", &taskdv1.Event{Type: taskdv1.EventType_EVENT_TYPE_SCHEDULED, Time: at, Identity: "alice", TaskId: "t1", Kind: "demo", Trigger: -1, Cursor: "40.0"},
			"2026-11-30T00:17:49.123Z  SCHEDULED       alice  t1  cursor 40.0"},
		{"succeeded", &taskdv1.Event{Type: taskdv1.EventType_EVENT_TYPE_SUCCEEDED, Time: at, Identity: "alice", TaskId: "t1", Kind: "demo", RunNumber: 3,
			Attempt: 1, Node: "vm", Outcome: taskdv1.Outcome_OUTCOME_SUCCESS, Message: "hello alice:\n run 3", Cursor: "41.2"},
			`2026-11-30T00:17:49.123Z  SUCCEEDED       alice  t1  run 3  node vm  outcome SUCCESS  message "hello alice: run 3"  cursor 41.2`},
		{"retrying", &taskdv1.Event{Type: taskdv1.EventType_EVENT_TYPE_RETRYING, Time: at, Identity: "bob", TaskId: "t2", RunNumber: 1, Attempt: 2, Node: "vm",
			Next: timestamppb.New(time.Date(2026, 11, 30, 0, 17, 51, 0, time.UTC)), Cursor: "42.0"},
			"2026-11-30T00:17:49.123Z  RETRYING        bob  t2  run 1  attempt 2  node vm  next 2026-11-30T00:17:51.000Z  cursor 42.0"},
		{"misfired", &taskdv1.Event{Type: taskdv1.EventType_EVENT_TYPE_MISFIRED, Time: at, Identity: "bob", TaskId: "t2", Count: 4, Cursor: "43.0"},
			"2026-11-30T00:17:49.123Z  MISFIRED        bob  t2  count 4  cursor 43.0"},
		{"kind pause", &taskdv1.Event{Type: taskdv1.EventType_EVENT_TYPE_PAUSED, Time: at, Kind: "email", Trigger: -1, Cursor: "44.0"},
			"2026-11-30T00:17:49.123Z  PAUSED          -  -  kind email  cursor 44.0"},
		{"move", &taskdv1.Event{Type: taskdv1.EventType_EVENT_TYPE_MOVED, Time: at, Identity: "alice", Node: "b", Message: "from a", Cursor: "45.1"},
			`2026-11-30T00:17:49.123Z  MOVED           alice  -  node b  message "from a"  cursor 45.1`},
	} {
		if got := FormatEvent(tc.ev); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

package eventview

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestArmed: only a FIRED or STARTED of a trigger whose time is its fire
// time is an armed start; one started after its fire time, a manual run
// (trigger -1, its fire time its start) and other events are not.
func TestArmed(t *testing.T) {
	fire := time.Date(2026, 12, 1, 9, 44, 51, 0, time.UTC)
	ev := func(typ taskdv1.EventType, at time.Time, fireTime *timestamppb.Timestamp) *taskdv1.Event {
		return &taskdv1.Event{Type: typ, Time: timestamppb.New(at), FireTime: fireTime, Trigger: 0}
	}
	for _, tc := range []struct {
		name string
		ev   *taskdv1.Event
		want bool
	}{
		{"armed FIRED", ev(taskdv1.EventType_EVENT_TYPE_FIRED, fire, timestamppb.New(fire)), true},
		{"armed STARTED", ev(taskdv1.EventType_EVENT_TYPE_STARTED, fire, timestamppb.New(fire)), true},
		{"started late", ev(taskdv1.EventType_EVENT_TYPE_STARTED, fire.Add(3*time.Millisecond), timestamppb.New(fire)), false},
		{"no fire time", ev(taskdv1.EventType_EVENT_TYPE_FIRED, fire, nil), false},
		{"manual run", &taskdv1.Event{Type: taskdv1.EventType_EVENT_TYPE_FIRED, Time: timestamppb.New(fire), FireTime: timestamppb.New(fire), Trigger: -1}, false},
		{"an outcome", ev(taskdv1.EventType_EVENT_TYPE_SUCCEEDED, fire, timestamppb.New(fire)), false},
	} {
		if got := Armed(tc.ev); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

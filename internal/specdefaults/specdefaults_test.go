package specdefaults

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestOf: an unset or zero setting is the default and marked so; a set one
// is itself; a default max shorter than a set initial wait is the initial
// wait, as the node's backoff makes it.
func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec *taskdv1.TaskSpec
		want Settings
	}{
		{"nothing set", &taskdv1.TaskSpec{}, Settings{MaxAttempts: 25, MaxAttemptsDefault: true,
			BackoffInitial: time.Second, BackoffMax: 10 * time.Minute, BackoffInitialDefault: true, BackoffMaxDefault: true,
			Timeout: 5 * time.Minute, TimeoutDefault: true}},
		{"zeros", &taskdv1.TaskSpec{Timeout: durationpb.New(0), Backoff: &taskdv1.Backoff{Initial: durationpb.New(0), Max: durationpb.New(0)}},
			Settings{MaxAttempts: 25, MaxAttemptsDefault: true, BackoffInitial: time.Second, BackoffMax: 10 * time.Minute,
				BackoffInitialDefault: true, BackoffMaxDefault: true, Timeout: 5 * time.Minute, TimeoutDefault: true}},
		{"all set", &taskdv1.TaskSpec{MaxAttempts: 3, Timeout: durationpb.New(time.Minute),
			Backoff: &taskdv1.Backoff{Initial: durationpb.New(2 * time.Second), Max: durationpb.New(time.Minute)}},
			Settings{MaxAttempts: 3, BackoffInitial: 2 * time.Second, BackoffMax: time.Minute, Timeout: time.Minute}},
		{"initial past the default max", &taskdv1.TaskSpec{Backoff: &taskdv1.Backoff{Initial: durationpb.New(20 * time.Minute)}},
			Settings{MaxAttempts: 25, MaxAttemptsDefault: true, BackoffInitial: 20 * time.Minute, BackoffMax: 20 * time.Minute,
				BackoffMaxDefault: true, Timeout: 5 * time.Minute, TimeoutDefault: true}},
	} {
		if got := Of(tc.spec); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

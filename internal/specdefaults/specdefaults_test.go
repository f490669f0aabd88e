package specdefaults

import (
	"fmt"
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

// The policies left to trigger kinds are listed once per kind, in trigger
// order; a task's own policy, or every trigger's own, lists none.
func TestMisfireByKind(t *testing.T) {
	cron := &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 * * * ?"}}}
	startup := &taskdv1.Trigger{Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}}
	own := &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 * * * ?"}},
		Misfire: taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL}
	for _, c := range []struct {
		spec *taskdv1.TaskSpec
		want string
	}{
		{&taskdv1.TaskSpec{Triggers: []*taskdv1.Trigger{cron, startup, cron}}, "[SKIP (default for cron) FIRE_ONCE_NOW (default for on-startup)]"},
		{&taskdv1.TaskSpec{Triggers: []*taskdv1.Trigger{own, startup}}, "[FIRE_ONCE_NOW (default for on-startup)]"},
		{&taskdv1.TaskSpec{Triggers: []*taskdv1.Trigger{own}}, "[]"},
		{&taskdv1.TaskSpec{Triggers: []*taskdv1.Trigger{cron}, Misfire: taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP}, "[]"},
	} {
		if got := fmt.Sprint(MisfireByKind(c.spec)); got != c.want {
			t.Errorf("MisfireByKind(%v) = %s, want %s", c.spec, got, c.want)
		}
	}
}

package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/client"
)

// TestScheduleWithoutTriggersRunsOnceNow schedules tasks that name no
// trigger through the client, one by Schedule and two by ScheduleMany,
// against a real node: the node gives each its default trigger (once, at
// its creation), and each runs once, for that fire time, and completes.
func TestScheduleWithoutTriggersRunsOnceNow(t *testing.T) {
	c := dial(t, []string{endpoint})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := client.TaskSpec{Identity: "no-trigger", Kind: "report", Scope: client.ScopeIdentity}
	one, _, err := c.Schedule(ctx, spec)
	if err != nil {
		t.Fatalf("Schedule without triggers: %v", err)
	}
	many, err := c.ScheduleMany(ctx, []client.TaskSpec{spec, spec})
	if err != nil {
		t.Fatalf("ScheduleMany without triggers: %v", err)
	}
	for _, task := range append([]*client.Task{one}, many...) {
		trs := task.Spec.Triggers
		if len(trs) != 1 || trs[0].Interval != 0 || trs[0].Cron != "" || trs[0].OnStartup || !trs[0].At.Equal(task.CreatedAt) {
			t.Fatalf("task %s stored with triggers %+v, want one once trigger at its creation %v", task.ID, trs, task.CreatedAt)
		}
		done, err := c.Wait(ctx, spec.Identity, task.ID)
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		runs, err := c.Runs(ctx, spec.Identity, task.ID)
		if err != nil {
			t.Fatalf("Runs: %v", err)
		}
		if done.State != client.StateCompleted || done.RunCount != 1 || len(runs) != 1 || !runs[0].FireTime.Equal(task.CreatedAt) {
			t.Fatalf("task %s: %s after %d runs %+v; want COMPLETED after one run for its creation time", task.ID, done.State, done.RunCount, runs)
		}
	}
}

package client_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/client"
)

const deleteMethod = "/taskd.v1.TaskService/DeleteTask"

func names(t *client.Task) string {
	var out []string
	for _, tr := range t.Spec.Triggers {
		out = append(out, tr.Name)
	}
	return fmt.Sprint(out)
}

// EditTriggers adds and removes triggers by name, keeping the others; a
// task cannot be left without a trigger. Delete refuses a live task and
// removes a cancelled one; retried after its answer was lost, it finds the
// task gone and succeeds.
func TestEditTriggersAndDelete(t *testing.T) {
	f, c, ctx := faultyNode(t)
	task, _, err := c.Schedule(ctx, later("edit"))
	if err != nil {
		t.Fatal(err)
	}
	hourly := client.Every(time.Hour)
	hourly.Name = "hourly"
	got, err := c.EditTriggers(ctx, "edit", task.ID, client.TriggerEdit{Add: []client.Trigger{hourly}, Revision: task.Revision})
	if err != nil || names(got) != "[#0 hourly]" {
		t.Fatalf("add: %v, triggers %s; want [#0 hourly]", err, names(got))
	}
	if got, err = c.EditTriggers(ctx, "edit", task.ID, client.TriggerEdit{Remove: []string{"#0"}}); err != nil || names(got) != "[hourly]" {
		t.Fatalf("remove #0: %v, triggers %s; want [hourly]", err, names(got))
	}
	if _, err := c.EditTriggers(ctx, "edit", task.ID, client.TriggerEdit{Remove: []string{"hourly"}}); !errors.Is(err, client.ErrFailedPrecondition) {
		t.Fatalf("remove the last trigger: %v, want ErrFailedPrecondition", err)
	}
	if _, err := c.EditTriggers(ctx, "edit", task.ID, client.TriggerEdit{Remove: []string{"nope"}}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("remove an unknown name: %v, want ErrInvalidArgument", err)
	}

	if err := c.Delete(ctx, "edit", task.ID); !errors.Is(err, client.ErrFailedPrecondition) {
		t.Fatalf("delete of a live task: %v, want ErrFailedPrecondition", err)
	}
	if _, err := c.Cancel(ctx, "edit", task.ID); err != nil {
		t.Fatal(err)
	}
	removedDespiteLostAnswer(t, f, deleteMethod, "task",
		func() error { return c.Delete(ctx, "edit", task.ID) },
		func() error { _, err := c.Get(ctx, "edit", task.ID); return err })
}

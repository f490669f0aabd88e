package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/taskd/taskd/pkg/client"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
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
	etcd := tst.StartEtcd(t)
	var f fault
	s := startNode(t, etcd.Client(t), "n1", grpc.ChainUnaryInterceptor(f.unary))
	c := dial(t, []string{s.addr}, client.WithRetries(5, 10*time.Millisecond, 100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
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
	f.arm(deleteMethod, 1, false)
	before := f.calls.Load()
	if err := c.Delete(ctx, "edit", task.ID); err != nil {
		t.Fatalf("delete whose first answer is lost: %v", err)
	}
	if n := f.calls.Load() - before; n != 2 {
		t.Fatalf("the server saw %d calls, want 2 (the lost answer and the retry)", n)
	}
	if _, err := c.Get(ctx, "edit", task.ID); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("the deleted task: %v, want ErrNotFound", err)
	}
	if err := c.Delete(ctx, "edit", task.ID); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("a first delete of a gone task: %v, want ErrNotFound", err)
	}
}

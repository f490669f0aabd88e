package taskservice_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func deleteTask(n *tst.Node, id, taskID string) error {
	ctx, cancel := rpc()
	defer cancel()
	_, err := n.Client.DeleteTask(ctx, &taskdv1.DeleteTaskRequest{Identity: id, TaskId: taskID})
	return err
}

// keysNaming lists the keys under the cluster's prefix that contain any of
// subs, but for handoff entries (a message to the owner, which it takes
// and removes).
func (c *cluster) keysNaming(subs ...string) []string {
	c.t.Helper()
	ctx, cancel := rpc()
	defer cancel()
	resp, err := c.cli.Get(ctx, "/taskd/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		for _, s := range subs {
			if strings.Contains(string(kv.Key), s) && !strings.HasPrefix(string(kv.Key), "/taskd/handoff/") {
				out = append(out, string(kv.Key))
			}
		}
	}
	return out
}

// TestDeleteTaskOfEachFinalStateFromANonOwner: DeleteTask, sent to a node
// that does not own the identity, removes a COMPLETED, a DEAD and a
// CANCELED task at once with their history, idempotency key and calendar
// references (the calendar can be deleted after, the key names a new task);
// it refuses a live task (FAILED_PRECONDITION saying to cancel it) and an
// unknown one (NOT_FOUND).
func TestDeleteTaskOfEachFinalStateFromANonOwner(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	c.own("a", "del")
	c.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		if string(r.Payload) == "fail" {
			return errors.New("always")
		}
		return nil
	}
	if _, err := createCalendar(t, c.nodes["a"], weekly("del-cal", "SUN"), false); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, node: c.nodes["b"]}
	completed := spec("del", "rec", now())
	completed.IdempotencyKey, completed.Calendars = "del-key", []string{"del-cal"}
	dead := spec("del", "rec", now())
	dead.Payload, dead.MaxAttempts = []byte("fail"), 1
	canceled := spec("del", "rec", every(time.Now().Add(time.Hour), time.Hour, 0))
	live := spec("del", "rec", every(time.Now().Add(time.Hour), time.Hour, 0))
	tasks := map[taskdv1.TaskState]*taskdv1.Task{
		taskdv1.TaskState_TASK_STATE_COMPLETED: c.schedule("a", completed), // a has the calendar it just made
		taskdv1.TaskState_TASK_STATE_DEAD:      c.schedule("b", dead),
		taskdv1.TaskState_TASK_STATE_CANCELED:  c.schedule("b", canceled),
	}
	liveTask := c.schedule("b", live)
	ctx, cancel := rpc()
	defer cancel()
	if _, err := c.nodes["b"].Client.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "del", TaskId: tasks[taskdv1.TaskState_TASK_STATE_CANCELED].Id}); err != nil {
		t.Fatal(err)
	}
	for state, task := range tasks {
		h.waitState("del", task.Id, state)
	}
	if err := deleteTask(c.nodes["b"], "del", liveTask.Id); status.Code(err) != codes.FailedPrecondition || !contains(err.Error(), "cancel it first") {
		t.Fatalf("delete of a SCHEDULED task: %v, want FAILED_PRECONDITION saying to cancel it first", err)
	}
	if err := deleteTask(c.nodes["b"], "del", "01hzzzzzzzzzzzzzzzzzzzzzzz"); status.Code(err) != codes.NotFound {
		t.Fatalf("delete of an unknown task: %v, want NOT_FOUND", err)
	}
	for state, task := range tasks {
		if len(c.keysNaming(task.Id)) == 0 {
			t.Fatalf("%s task %s has no keys before the delete", state, task.Id)
		}
		if err := deleteTask(c.nodes["b"], "del", task.Id); err != nil {
			t.Fatalf("delete of the %s task: %v", state, err)
		}
		for _, n := range []string{"a", "b"} {
			_, err := c.nodes[n].Client.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: "del", TaskId: task.Id})
			if status.Code(err) != codes.NotFound {
				t.Fatalf("%s task after its delete, read on %s: %v, want NOT_FOUND", state, n, err)
			}
		}
		if left := c.keysNaming(task.Id); len(left) > 0 {
			t.Fatalf("%s task: keys left after its delete: %v", state, left)
		}
		if err := deleteTask(c.nodes["a"], "del", task.Id); status.Code(err) != codes.NotFound {
			t.Fatalf("second delete of the %s task: %v, want NOT_FOUND", state, err)
		}
	}
	if left := c.keysNaming("del-key"); len(left) > 0 {
		t.Fatalf("idempotency key left: %v", left)
	}
	again := c.schedule("a", completed)
	if again.Id == tasks[taskdv1.TaskState_TASK_STATE_COMPLETED].Id {
		t.Fatalf("the deleted task's idempotency key still names it")
	}
	h.waitState("del", again.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if err := deleteTask(c.nodes["b"], "del", again.Id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.nodes["b"].Client.DeleteCalendar(ctx, &taskdv1.DeleteCalendarRequest{Name: "del-cal"}); err != nil {
		t.Fatalf("the calendar the deleted tasks used: %v", err)
	}
	// The owner took the handoff entries that told it of the deletes, and
	// still runs the identity's tasks.
	tst.Eventually(t, 10*time.Second, func() bool {
		resp, err := c.cli.Get(ctx, "/taskd/handoff/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 0
	}, "the owner to take its handoff entries")
	h.waitState("del", c.schedule("b", spec("del", "rec", now())).Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
}

// TestDeleteOfACancelledTaskWhoseRunIsInFlight: a task cancelled while its
// run goes on is CANCELED and may be deleted; the run's commit, which comes
// after, finds the task gone and writes nothing (its Txn is fenced on the
// task's revision): the task does not come back, with no history.
func TestDeleteOfACancelledTaskWhoseRunIsInFlight(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	c.own("a", "fly")
	release := make(chan struct{})
	c.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		<-release
		return nil
	}
	task := c.schedule("a", spec("fly", "rec", now()))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) == 1 }, "the run to start")
	ctx, cancel := rpc()
	defer cancel()
	if _, err := c.nodes["b"].Client.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "fly", TaskId: task.Id}); err != nil {
		t.Fatal(err)
	}
	if err := deleteTask(c.nodes["b"], "fly", task.Id); err != nil {
		t.Fatalf("delete of the cancelled task with its run in flight: %v", err)
	}
	close(release)
	tst.Eventually(t, 10*time.Second, func() bool { return c.ev["a"].has(taskservice.EventSucceeded, task.Id) }, "the run to end on a")
	if _, err := c.nodes["a"].Client.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: "fly", TaskId: task.Id}); status.Code(err) != codes.NotFound {
		t.Fatalf("the task after its run ended: %v, want NOT_FOUND", err)
	}
	if left := c.keysNaming(task.Id); len(left) > 0 {
		t.Fatalf("keys written after the delete: %v", left)
	}
}

// TestDeleteEveryNodeTask: a cancelled EVERY_NODE task is deleted from any
// node with every node's history and progress on it; before it is
// cancelled the delete is refused.
func TestDeleteEveryNodeTask(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	task := c.schedule("a", everyNode(spec("en", "rec", now(), every(time.Now().Add(time.Hour), time.Hour, 0))))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) == 2 }, "one run on each node")
	tst.Eventually(t, 10*time.Second, func() bool {
		return len(c.keysNaming("everynode/a/"+task.Id, "everynode/b/"+task.Id)) == 2
	}, "each node's progress")
	if err := deleteTask(c.nodes["b"], "en", task.Id); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("delete of a live EVERY_NODE task: %v, want FAILED_PRECONDITION", err)
	}
	ctx, cancel := rpc()
	defer cancel()
	if _, err := c.nodes["a"].Client.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "en", TaskId: task.Id}); err != nil {
		t.Fatal(err)
	}
	if err := deleteTask(c.nodes["b"], "en", task.Id); err != nil {
		t.Fatalf("delete of the cancelled EVERY_NODE task: %v", err)
	}
	if left := c.keysNaming(task.Id); len(left) > 0 {
		t.Fatalf("keys left after the delete: %v", left)
	}
	for _, n := range []string{"a", "b"} {
		if _, err := c.nodes[n].Client.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: "en", TaskId: task.Id}); status.Code(err) != codes.NotFound {
			t.Fatalf("runs of the deleted task on %s: %v, want NOT_FOUND", n, err)
		}
	}
}

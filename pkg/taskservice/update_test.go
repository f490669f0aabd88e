package taskservice_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func update(ctx context.Context, n *tst.Node, id string, task *taskdv1.Task, mod func(*taskdv1.TaskSpec), rev int64) (*taskdv1.Task, error) {
	s := proto.Clone(task.Spec).(*taskdv1.TaskSpec)
	s.Data = nil
	mod(s)
	resp, err := n.Client.UpdateTask(ctx, &taskdv1.UpdateTaskRequest{Identity: id, TaskId: task.Id, Spec: s, Revision: rev})
	return resp.GetTask(), err
}

// TestUpdateTaskReplacesTheSpecKeepingTheTask: UpdateTask changes payload
// and triggers of a running schedule without a new id; the run in flight
// finishes with the payload it started with; run numbers and history go on;
// a trigger left as it was keeps its progress; the update is conditional on
// the revision read; what may not change is refused naming the field.
func TestUpdateTaskReplacesTheSpecKeepingTheTask(t *testing.T) {
	h := newHarness(t, nil)
	release := make(chan struct{})
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		if n == 1 {
			<-release // the first run is in flight during the update
		}
		return nil
	}
	iv := 40 * time.Millisecond
	keep := every(time.Now().Add(iv), iv, 0)
	s := spec("u", "rec", keep)
	s.Payload = []byte("v1")
	task := h.schedule(s)
	tst.Eventually(t, 10*time.Second, func() bool { return len(h.rec.of(task.Id)) == 1 }, "the first run to start")
	cur := h.get("u", task.Id)
	if cur.State != taskdv1.TaskState_TASK_STATE_RUNNING {
		t.Fatalf("state %v, want RUNNING", cur.State)
	}
	ctx, cancel := rpc()
	defer cancel()

	// Refusals first: a stale revision, a field that may not change, a bad
	// new trigger. None changes the task.
	if _, err := update(ctx, h.node, "u", cur, func(s *taskdv1.TaskSpec) { s.Payload = []byte("x") }, cur.Revision-1); status.Code(err) != codes.Aborted {
		t.Fatalf("update at a stale revision: %v, want ABORTED", err)
	}
	_, err := update(ctx, h.node, "u", cur, func(s *taskdv1.TaskSpec) { s.Kind = "other" }, 0)
	if status.Code(err) != codes.InvalidArgument || !contains(err.Error(), "spec.kind") {
		t.Fatalf("update of kind: %v, want INVALID_ARGUMENT naming spec.kind", err)
	}
	_, err = update(ctx, h.node, "u", cur, func(s *taskdv1.TaskSpec) {
		s.Triggers = append(s.Triggers, &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "nonsense"}}})
	}, 0)
	if status.Code(err) != codes.InvalidArgument || !contains(err.Error(), "spec.triggers[1].cron.expression") {
		t.Fatalf("update with a bad cron: %v, want INVALID_ARGUMENT naming spec.triggers[1].cron.expression", err)
	}

	// The update: new payload, the periodic trigger kept, a once trigger added.
	onceAt := time.Now().Add(time.Hour)
	up, err := update(ctx, h.node, "u", cur, func(s *taskdv1.TaskSpec) {
		s.Payload = []byte("v2")
		s.Triggers = append(s.Triggers, once(onceAt))
	}, cur.Revision)
	if err != nil {
		t.Fatalf("UpdateTask: %v", err)
	}
	if up.Id != task.Id || string(up.Spec.Payload) != "v2" || len(up.Spec.Triggers) != 2 || up.Revision <= cur.Revision {
		t.Fatalf("updated task %+v", up)
	}
	if !proto.Equal(up.Spec.Triggers[0], cur.Spec.Triggers[0]) {
		t.Fatalf("kept trigger changed: %v -> %v", cur.Spec.Triggers[0], up.Spec.Triggers[0])
	}
	close(release)
	tst.Eventually(t, 10*time.Second, func() bool { return len(h.rec.of(task.Id)) >= 3 }, "runs after the update")
	runs := h.rec.of(task.Id)
	for i, c := range runs {
		if c.Run != int64(i+1) {
			t.Fatalf("run numbers %v: not continuing", runs)
		}
		if i > 0 && !c.Fire.After(runs[i-1].Fire) {
			t.Fatalf("fire times not increasing across the update: %v then %v (the kept trigger lost its progress)", runs[i-1].Fire, c.Fire)
		}
	}
	hist := h.runs("u", task.Id)
	if len(hist) < 1 || hist[len(hist)-1].RunNumber != 1 || hist[len(hist)-1].Outcome != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Fatalf("history lost the run in flight at the update: %v", hist)
	}
	if !h.ev.has(taskservice.EventUpdated, task.Id) {
		t.Fatalf("no UPDATED event")
	}
	// A finished task cannot be updated.
	if _, err := h.node.Client.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "u", TaskId: task.Id}); err != nil {
		t.Fatal(err)
	}
	if _, err := update(ctx, h.node, "u", h.get("u", task.Id), func(s *taskdv1.TaskSpec) {}, 0); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("update of a cancelled task: %v, want FAILED_PRECONDITION", err)
	}
}

// TestUpdateTaskDataSeenByTheNextRun: data set by an update reaches the
// runs after it; the run in flight had the data it started with.
func TestUpdateTaskDataSeenByTheNextRun(t *testing.T) {
	h := newHarness(t, nil)
	var data []string
	release := make(chan struct{})
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		if n == 1 {
			<-release
		}
		return nil
	}
	s := spec("u2", "rec", every(time.Now().Add(20*time.Millisecond), 40*time.Millisecond, 3))
	s.Data = []byte("d1")
	task := h.schedule(s)
	tst.Eventually(t, 10*time.Second, func() bool { return len(h.rec.of(task.Id)) == 1 }, "the first run")
	ctx, cancel := rpc()
	defer cancel()
	if _, err := update(ctx, h.node, "u2", h.get("u2", task.Id), func(s *taskdv1.TaskSpec) { s.Data = []byte("d2") }, 0); err != nil {
		t.Fatal(err)
	}
	close(release)
	h.waitState("u2", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	for _, c := range h.rec.of(task.Id) {
		data = append(data, c.Data)
	}
	if len(data) != 3 || data[0] != "d1" || data[1] != "d2" || data[2] != "d2" {
		t.Fatalf("data seen by runs %v, want d1 (in flight at the update), then d2", data)
	}
}

// TestUpdateEveryNodeTaskKeepsEachNodesProgress: an EVERY_NODE once task
// that already ran on every node does not run again when an update leaves
// its trigger as it was; a trigger the update adds runs on every node.
func TestUpdateEveryNodeTaskKeepsEachNodesProgress(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	task := c.schedule("a", everyNode(spec("e", "rec", now())))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) == 2 }, "one run on each node")
	ctx, cancel := rpc()
	defer cancel()
	cur := getTask(t, c.nodes["a"], "e", task.Id)
	if _, err := update(ctx, c.nodes["a"], "e", cur, func(s *taskdv1.TaskSpec) {
		s.Payload = []byte("new")
		s.Triggers = append(s.Triggers, after(50*time.Millisecond))
	}, 0); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) >= 4 }, "the added trigger to run on each node")
	waitPast(t, time.Now().Add(300*time.Millisecond))
	perNode := map[string]int{}
	for _, s := range c.rec.of(task.Id) {
		perNode[s.Node]++
	}
	if perNode["a"] != 2 || perNode["b"] != 2 {
		t.Fatalf("runs per node %v, want 2 each (the kept once trigger must not run again)", perNode)
	}
}

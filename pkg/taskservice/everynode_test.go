package taskservice_test

import (
	"context"
	"testing"
	"time"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func everyNode(s *taskdv1.TaskSpec) *taskdv1.TaskSpec {
	s.Scope = taskdv1.Scope_SCOPE_EVERY_NODE
	return s
}

// An EVERY_NODE task is stored once and runs on every RUNNING node by its
// triggers, each node with its own run numbers; a cancel from any node
// stops it everywhere.
func TestEveryNodeTaskRunsOnEachNode(t *testing.T) {
	c := newCluster(t, []string{"a", "b", "c"}, nil)
	start := time.Now().Add(100 * time.Millisecond).Truncate(time.Millisecond)
	iv := 100 * time.Millisecond
	task := c.schedule("a", everyNode(spec("cache", "rec", every(start, iv, 3))))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) == 9 }, "3 runs on each of 3 nodes")
	perNode := map[string][]int64{}
	fires := map[string]map[int64]bool{}
	for _, s := range c.rec.of(task.Id) {
		perNode[s.Node] = append(perNode[s.Node], s.Run)
		if fires[s.Node] == nil {
			fires[s.Node] = map[int64]bool{}
		}
		fires[s.Node][s.Fire.UnixNano()] = true
	}
	for _, n := range []string{"a", "b", "c"} {
		if got := perNode[n]; len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
			t.Errorf("node %s ran runs %v, want 1,2,3", n, got)
		}
		for k := range 3 {
			if !fires[n][start.Add(time.Duration(k)*iv).UnixNano()] {
				t.Errorf("node %s missed fire time %d", n, k)
			}
		}
	}
	h := &harness{t: t, node: c.nodes["b"]}
	tst.Eventually(t, 5*time.Second, func() bool { return len(h.runs("cache", task.Id)) == 9 }, "9 runs in history")
	// Stored once: the identity is not mapped for it, and it lists once.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := c.nodes["c"].Client.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "cache"})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].Spec.Scope != taskdv1.Scope_SCOPE_EVERY_NODE {
		t.Fatalf("list: %v %v, want the one EVERY_NODE task", list.GetTasks(), err)
	}
	if id := c.identity("a", "cache"); id.Mapped {
		t.Errorf("identity %v mapped for an EVERY_NODE task", id)
	}
}

func TestEveryNodeCancelStopsAllNodes(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	task := c.schedule("a", everyNode(spec("e", "rec", every(time.Now(), 30*time.Millisecond, 0))))
	ran := func(node string) int {
		n := 0
		for _, s := range c.rec.of(task.Id) {
			if s.Node == node {
				n++
			}
		}
		return n
	}
	tst.Eventually(t, 10*time.Second, func() bool { return ran("a") >= 2 && ran("b") >= 2 }, "runs on both nodes")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.nodes["b"].Client.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "e", TaskId: task.Id}); err != nil {
		t.Fatal(err)
	}
	// Both nodes see the cancel through their watch; in-flight runs commit,
	// then nothing more: a later EVERY_NODE probe runs on both, the
	// cancelled task does not run again.
	probe := c.schedule("a", everyNode(spec("e", "rec", after(200*time.Millisecond))))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(probe.Id)) == 2 }, "the probe on both nodes")
	n := len(c.rec.of(task.Id))
	probe2 := c.schedule("a", everyNode(spec("e", "rec", after(100*time.Millisecond))))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(probe2.Id)) == 2 }, "the second probe")
	if m := len(c.rec.of(task.Id)); m != n {
		t.Fatalf("cancelled EVERY_NODE task ran %d more times", m-n)
	}
	h := &harness{t: t, node: c.nodes["a"]}
	if got := h.get("e", task.Id); got.State != taskdv1.TaskState_TASK_STATE_CANCELED {
		t.Errorf("state %s, want CANCELED", got.State)
	}
}

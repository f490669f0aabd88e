package taskservice_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func onStartup() *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}}
}

// restart stops node name and starts it again under the same name.
func (c *cluster) restart(name string) { c.restartWith(name, nil, nil) }

// restartWith stops node name, calls down while it is down, and starts it
// again with mod applied to its configuration.
func (c *cluster) restartWith(name string, down func(), mod func(*taskservice.Config)) {
	c.t.Helper()
	ctx, cancel := rpc()
	defer cancel()
	if err := c.nodes[name].Stop(ctx); err != nil {
		c.t.Fatalf("stop %s: %v", name, err)
	}
	if down != nil {
		down()
	}
	c.start(name, mod)
}

// runsOn counts the runs of task on each node.
func (c *cluster) runsOn(taskID string) map[string]int {
	out := map[string]int{}
	for _, s := range c.rec.of(taskID) {
		out[s.Node]++
	}
	return out
}

// TestOnStartupFiresOncePerStart: an on-start-up task runs once when
// scheduled (no run is known), never again while its node runs, and once
// more after each restart: the run persisted by the earlier start does not
// suppress it. The task never completes on its own.
func TestOnStartupFiresOncePerStart(t *testing.T) {
	c := newCluster(t, []string{"a"}, nil)
	task := c.schedule("a", spec("svc", "rec", onStartup()))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) == 1 }, "the first run")
	for restart := 1; restart <= 2; restart++ {
		h := &harness{t: t, node: c.nodes["a"]}
		got := h.waitState("svc", task.Id, taskdv1.TaskState_TASK_STATE_SCHEDULED)
		if got.NextFireTime != nil {
			t.Fatalf("an on-start-up task shows a next fire time %v while its node runs", got.NextFireTime.AsTime())
		}
		waitPast(t, time.Now().Add(200*time.Millisecond))
		if n := len(c.rec.of(task.Id)); n != restart {
			t.Fatalf("%d runs before restart %d, want %d", n, restart, restart)
		}
		c.restart("a")
		tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) == restart+1 }, "a run after restart %d", restart)
		last := c.rec.of(task.Id)[restart]
		if ds := c.nodes["a"].Node.DispatchStart(); last.Start.Before(ds) {
			t.Fatalf("run after restart started %v, before the node's dispatch start %v", last.Start, ds)
		}
	}
	runs := c.rec.of(task.Id)
	for i, r := range runs {
		if r.Run != int64(i+1) {
			t.Fatalf("run numbers %v", runs)
		}
	}
}

// TestOnStartupEveryNodeFiresOnEachStartOfEachNode: an EVERY_NODE
// on-start-up task runs once on every node, and again on a node that
// restarts, not on the others.
func TestOnStartupEveryNodeFiresOnEachStartOfEachNode(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	task := c.schedule("a", everyNode(spec("fleet", "rec", onStartup())))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) == 2 }, "one run per node")
	c.restart("b")
	tst.Eventually(t, 10*time.Second, func() bool { return c.runsOn(task.Id)["b"] == 2 }, "b's run after its restart")
	waitPast(t, time.Now().Add(200*time.Millisecond))
	if got := c.runsOn(task.Id); got["a"] != 1 || got["b"] != 2 {
		t.Fatalf("runs per node %v, want a:1 b:2", got)
	}
}

// TestOnStartupAfterAMove: after a move, the new owner runs the task only
// if it started after the task's last run.
func TestOnStartupAfterAMove(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	c.own("a", "m")
	task := c.schedule("a", spec("m", "rec", onStartup()))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) == 1 }, "the run on a")
	// b started before that run: moving there fires nothing.
	c.move("a", "m", "b")
	h := &harness{t: t, node: c.nodes["a"]}
	tst.Eventually(t, 10*time.Second, func() bool { return c.identity("a", "m").Node == "b" }, "the move to b")
	waitPast(t, time.Now().Add(300*time.Millisecond))
	if got := c.nodesOf(task.Id); fmt.Sprint(got) != "[a]" {
		t.Fatalf("runs on %v after moving to b (started before the last run), want only a", got)
	}
	// c starts after the last run: moving there fires once.
	c.start("c", nil)
	c.move("a", "m", "c")
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) == 2 }, "the run on c")
	if got := c.nodesOf(task.Id); fmt.Sprint(got) != "[a c]" {
		t.Fatalf("runs on %v, want a then c", got)
	}
	h.waitState("m", task.Id, taskdv1.TaskState_TASK_STATE_SCHEDULED)
}

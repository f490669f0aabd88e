package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// ranOn counts the recorded runs of node.
func (c *cluster) ranOn(node string) int {
	k := 0
	for _, l := range c.recLines() {
		if l.node == node {
			k++
		}
	}
	return k
}

// waitMoreRuns waits until node has recorded more than n runs.
func (c *cluster) waitMoreRuns(t *testing.T, node string, n int, what string) {
	t.Helper()
	eventually(t, waitLong, what, func() error {
		if got := c.ranOn(node); got <= n {
			return fmt.Errorf("%d runs on %s, waiting for more than %d", got, node, n)
		}
		return nil
	})
}

// secondNodeA is the options of a second process of node-a, with a data
// directory of its own.
func (c *cluster) secondNodeA() nodeOptions {
	opts := c.opts("node-a")
	opts.dataDir = filepath.Join(c.dir, "data-node-a-second")
	return opts
}

// liveNode starts node-a of cl with a periodic task, and waits until the
// task ran there. It returns the process and the node as listed.
func liveNode(t *testing.T, cl *cluster, extra ...string) (*taskd, *taskdv1.Node) {
	t.Helper()
	opts := cl.opts("node-a", extra...)
	a := startNode(t, opts)
	schedule(t, a.Client(), &taskdv1.TaskSpec{Identity: "alive", Kind: "rec", Triggers: every(100 * time.Millisecond)})
	cl.waitIdentitiesRan(t, "node-a", 1, "the periodic task ran on node-a")
	ctx, cancel := rpcCtx()
	defer cancel()
	self, err := a.self(ctx)
	if err != nil || self == nil {
		t.Fatalf("node-a as listed: %v, %v", self, err)
	}
	return a, self
}

// TestSecondProcessOfALiveNameIsRefused starts a second process under the
// name of a live node: it must exit non-zero naming the live node, and the
// live node must go on running its tasks.
func TestSecondProcessOfALiveNameIsRefused(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, "/samename/")
	a, self := liveNode(t, cl)

	log := launchRefused(t, cl.secondNodeA(), "the second node-a")
	for _, want := range []string{"node-a", self.GetIncarnation(), self.GetAddress(), "--replace"} {
		if !strings.Contains(log, want) {
			t.Errorf("the second node-a's output does not name %q:\n%s", want, log)
		}
	}

	if a.exited() {
		t.Fatalf("the live node-a exited with code %d", a.exitCode())
	}
	ctx, cancel := rpcCtx()
	defer cancel()
	now, err := a.self(ctx)
	if err != nil || now.GetState() != taskdv1.NodeState_NODE_STATE_RUNNING || now.GetIncarnation() != self.GetIncarnation() {
		t.Fatalf("node-a after the refused start: %v, %v; want the same incarnation RUNNING", now, err)
	}
	cl.waitMoreRuns(t, "node-a", cl.ranOn("node-a"), "node-a goes on running its task")
}

// TestReplaceTakesOverALiveName starts a second process under the name of a
// live node with --replace: it becomes RUNNING, the first stops by itself,
// and the task goes on running.
func TestReplaceTakesOverALiveName(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, "/replace/")
	a, self := liveNode(t, cl)

	opts := cl.secondNodeA()
	opts.extra = append(opts.extra, "--replace")
	b := startNode(t, opts)
	if _, ok := a.waitExit(waitExitTimeout); !ok {
		t.Fatalf("the replaced node-a is still running %s after the new one started", waitExitTimeout)
	}
	ctx, cancel := rpcCtx()
	defer cancel()
	now, err := b.self(ctx)
	if err != nil || now.GetIncarnation() == self.GetIncarnation() || now.GetState() != taskdv1.NodeState_NODE_STATE_RUNNING {
		t.Fatalf("node-a after the replacement: %v, %v; want a new incarnation RUNNING", now, err)
	}
	cl.waitMoreRuns(t, "node-a", cl.ranOn("node-a"), "the new node-a runs the task")
}

// TestRestartAfterSIGKILLIsNotRefused kills a node and starts it again at
// once without --replace, on the same API address: its old registration's
// lease is still live (the TTL is a minute, longer than the test waits), and
// the address answers, but only for the new incarnation, so the new process
// takes the name without waiting for the lease.
func TestRestartAfterSIGKILLIsNotRefused(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, "/killed/")
	a, self := liveNode(t, cl, "--lease-ttl", "60s")
	a.Kill()

	opts := cl.opts("node-a", "--lease-ttl", "60s")
	opts.listen = a.listen
	b := launch(t, opts)
	if err := b.waitRunning(waitLong); err != nil {
		t.Fatalf("the restarted node-a: %v", err)
	}
	ctx, cancel := rpcCtx()
	defer cancel()
	now, err := b.self(ctx)
	if err != nil || now.GetIncarnation() == self.GetIncarnation() {
		t.Fatalf("node-a after the restart: %v, %v; want a new incarnation", now, err)
	}
	// The new process itself answers at the address, for its own incarnation.
	if !b.log.Contains("previous incarnation does not answer") || !b.log.Contains("serves another incarnation") {
		t.Errorf("the restarted node-a does not say why it replaced the old registration:\n%s", b.log.String())
	}
	cl.waitMoreRuns(t, "node-a", cl.ranOn("node-a"), "the restarted node-a runs the task")
}

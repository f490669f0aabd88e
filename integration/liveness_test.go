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

// liveNode starts node-a of cl with a periodic task, and waits until the
// task ran there. It returns the process and the node as listed.
func liveNode(t *testing.T, cl *cluster, extra ...string) (*taskd, *taskdv1.Node) {
	t.Helper()
	opts := cl.opts("node-a")
	opts.extra = append(opts.extra, extra...)
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

	opts := cl.opts("node-a")
	opts.dataDir = filepath.Join(cl.dir, "data-node-a-second")
	second := launch(t, opts)
	code, ok := second.waitExit(waitExitTimeout)
	if !ok {
		t.Fatalf("the second node-a is still running after %s", waitExitTimeout)
	}
	if code == 0 {
		t.Errorf("the second node-a exited 0, want non-zero")
	}
	log := second.log.String()
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

	opts := cl.opts("node-a")
	opts.dataDir = filepath.Join(cl.dir, "data-node-a-second")
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
// once without --replace: its old registration's lease is still live (the
// TTL is a minute, longer than the test waits), but nothing answers at its
// address, so the new process takes the name without waiting for the lease.
func TestRestartAfterSIGKILLIsNotRefused(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, "/killed/")
	a, self := liveNode(t, cl, "--lease-ttl", "60s")
	a.Kill()

	opts := cl.opts("node-a")
	opts.extra = append(opts.extra, "--lease-ttl", "60s")
	b := startNode(t, opts)
	ctx, cancel := rpcCtx()
	defer cancel()
	now, err := b.self(ctx)
	if err != nil || now.GetIncarnation() == self.GetIncarnation() {
		t.Fatalf("node-a after the restart: %v, %v; want a new incarnation", now, err)
	}
	if !b.log.Contains("previous incarnation does not answer") {
		t.Errorf("the restarted node-a does not say why it replaced the old registration:\n%s", b.log.String())
	}
	cl.waitMoreRuns(t, "node-a", cl.ranOn("node-a"), "the restarted node-a runs the task")
}

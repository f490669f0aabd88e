package taskservice_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// waitDone fails the test if node n has not stopped within 20 s.
func waitDone(t *testing.T, n *tst.Node, why string) {
	t.Helper()
	select {
	case <-n.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not stop within 20 s of %s", n.Name(), why)
	}
}

// A drain asked for through the control key (DrainNode from another node)
// runs on the drained node, which stops by itself: its identities move, and
// Done closes (after the goroutine that drained and stopped it returned).
func TestDrainNodeThroughTheControlKeyStopsTheNode(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	c.own("a", "drained")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.nodes["b"].DrainNode(ctx, "a"); err != nil {
		t.Fatalf("DrainNode: %v", err)
	}
	waitDone(t, c.nodes["a"], "the drain request")
	if got := c.nodes["a"].State(); got != taskdv1.NodeState_NODE_STATE_STOPPED {
		t.Errorf("a is %s after Done, want STOPPED", got)
	}
	if got := c.identity("b", "drained").Node; got != "b" {
		t.Errorf("drained is mapped to %s, want b", got)
	}
}

// DrainNode of a name no node is registered under is NOT_FOUND, and so is
// DrainNode of a node that has stopped (Stop revoked its registration).
func TestDrainNodeOfAnUnknownOrStoppedNodeIsRefused(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.nodes["b"].DrainNode(ctx, "nobody"); !errors.Is(err, taskservice.ErrNotFound) {
		t.Errorf("DrainNode(nobody) = %v, want ErrNotFound", err)
	}
	if err := c.nodes["a"].Stop(ctx); err != nil {
		t.Fatalf("stop a: %v", err)
	}
	if _, err := c.nodes["b"].DrainNode(ctx, "a"); !errors.Is(err, taskservice.ErrNotFound) {
		t.Errorf("DrainNode of the stopped a = %v, want ErrNotFound", err)
	}
}

// The drain request's own event breaks the watch of the control key (the
// fault swallows the event): the key is listed again, and the request
// found there is acted on.
func TestDrainRequestLostWithTheWatchIsFoundByTheList(t *testing.T) {
	e := tst.StartEtcd(t)
	in := etcdfault.New()
	brk := in.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: "/taskd/control/a/", Times: 1, Action: etcdfault.BreakWatch()})
	a := faultNode(t, e, "a", in, &recorder{}, nil, nil)
	b := faultNode(t, e, "b", nil, &recorder{}, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.DrainNode(ctx, "a"); err != nil {
		t.Fatalf("DrainNode: %v", err)
	}
	waitDone(t, a, "the drain request")
	if brk.Hits() != 1 {
		t.Fatalf("the watch was broken %d times, want once", brk.Hits())
	}
}

// The deletion that moves an identity away breaks the watch of the
// ownership index (the fault swallows the event): the index is listed
// again, and the identity, missing from it, is dropped (MOVED).
func TestIdentityMovedWhileTheOwnershipWatchBrokeIsDropped(t *testing.T) {
	e := tst.StartEtcd(t)
	in := etcdfault.New()
	brk := in.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: "/taskd/owned/a/", Times: 1, Action: etcdfault.BreakWatch()})
	evA := &events{}
	a := faultNode(t, e, "a", in, &recorder{}, evA, nil)
	b := faultNode(t, e, "b", nil, &recorder{}, nil, nil)
	(&harness{t: t, node: a}).schedule(spec("leaving", "rec", after(time.Hour)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.MoveIdentity(ctx, "leaving", "b"); err != nil {
		t.Fatalf("move: %v", err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return evA.hasIdentity(taskservice.EventMoved, "leaving") },
		"a to drop the identity")
	if brk.Hits() != 1 {
		t.Fatalf("the watch was broken %d times, want once", brk.Hits())
	}
}

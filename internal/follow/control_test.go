package follow_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/internal/follow"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// controlNode is the node side of a Control: it records each request it is
// handed, as "drain <value> @<rev>" or "rebalance <value> @<rev>".
type controlNode struct {
	handed
}

func (n *controlNode) on() follow.OnControl {
	return follow.OnControl{
		Drain:     func(ctx context.Context, inc string, rev int64) { n.request(ctx, "drain", inc, rev) },
		Rebalance: func(ctx context.Context, req string, rev int64) { n.request(ctx, "rebalance", req, rev) },
	}
}

func (n *controlNode) request(ctx context.Context, what, value string, rev int64) {
	if ctx.Err() != nil {
		what += " (context ended)"
	}
	n.record(fmt.Sprintf("%s %s @%d", what, value, rev))
}

func (c *cluster) putString(t *testing.T, key, value string) int64 {
	t.Helper()
	resp, err := c.plain.Put(ctxFor(t), key, value)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return resp.Header.Revision
}

// Run lists the control area first and hands over the requests standing
// in it, each with its revision; another key of the area and another
// node's requests are left alone.
func TestControlListHandsOverStandingRequests(t *testing.T) {
	c := newCluster(t)
	drainRev := c.putString(t, keys.DrainRequest("n1"), "inc1")
	c.putString(t, keys.Control("n1")+"other", "x")
	c.putString(t, keys.DrainRequest("n2"), "inc2")
	rebRev := c.putString(t, keys.RebalanceRequest("n1"), "rebalance v1\n")
	n := &controlNode{}
	run(t, follow.NewControl(c.watch(), "n1", n.on()).Run)
	tst.Eventually(t, wait, func() bool { return n.count() == 2 }, "the two requests standing")
	// The area is listed in key order: drain before rebalance.
	want := []string{fmt.Sprintf("drain inc1 @%d", drainRev), fmt.Sprintf("rebalance rebalance v1\n @%d", rebRev)}
	if got := n.all(); !slices.Equal(got, want) {
		t.Fatalf("handed %q; want %q", got, want)
	}
}

// The watch hands over each request written, in order, and a deletion is
// no news.
func TestControlWatchHandsOverEachPut(t *testing.T) {
	c := newCluster(t)
	n := &controlNode{}
	run(t, follow.NewControl(c.watch(), "n1", n.on()).Run)
	first := c.putString(t, keys.DrainRequest("n1"), "inc1")
	tst.Eventually(t, wait, func() bool { return n.count() == 1 }, "the drain request")
	c.del(t, keys.DrainRequest("n1"))
	second := c.putString(t, keys.RebalanceRequest("n1"), "req")
	third := c.putString(t, keys.DrainRequest("n1"), "inc2")
	tst.Eventually(t, wait, func() bool { return n.count() >= 3 }, "the requests after the delete")
	want := []string{fmt.Sprintf("drain inc1 @%d", first), fmt.Sprintf("rebalance req @%d", second),
		fmt.Sprintf("drain inc2 @%d", third)}
	if got := n.all(); !slices.Equal(got, want) {
		t.Fatalf("handed %q; want %q", got, want)
	}
}

// A request whose event breaks the watch (the fault swallows it) is
// handed over by the list that follows, which hands over again the
// request still standing (this node did not delete it).
func TestControlBrokenWatchListsAgain(t *testing.T) {
	c := newCluster(t)
	brk := c.faults.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: keys.DrainRequest("n1"), Times: 1,
		Action: etcdfault.BreakWatch()})
	n := &controlNode{}
	run(t, follow.NewControl(c.watch(), "n1", n.on()).Run)
	rebRev := c.putString(t, keys.RebalanceRequest("n1"), "req")
	// Handed over by the first list or by the watch after it: the drain
	// request below comes after that list, so its event reaches the watch.
	tst.Eventually(t, wait, func() bool { return n.count() == 1 }, "the rebalancing request")
	drainRev := c.putString(t, keys.DrainRequest("n1"), "inc1")
	tst.Eventually(t, wait, func() bool { return n.count() == 3 }, "the list after the break")
	want := []string{fmt.Sprintf("rebalance req @%d", rebRev), fmt.Sprintf("drain inc1 @%d", drainRev),
		fmt.Sprintf("rebalance req @%d", rebRev)}
	if got := n.all(); !slices.Equal(got, want) {
		t.Fatalf("handed %q; want %q", got, want)
	}
	if brk.Hits() != 1 {
		t.Fatalf("the watch was broken %d times; want once", brk.Hits())
	}
	// The watch resumed after the list brings what comes next.
	later := c.putString(t, keys.DrainRequest("n1"), "inc2")
	tst.Eventually(t, wait, func() bool { return n.count() == 4 }, "the request after the new list")
	if got := n.all()[3]; got != fmt.Sprintf("drain inc2 @%d", later) {
		t.Fatalf("handed %q; want the new drain request", got)
	}
}

// A list that fails is tried again; the requests are handed over once it
// succeeds.
func TestControlListRetries(t *testing.T) {
	c := newCluster(t)
	rev := c.putString(t, keys.DrainRequest("n1"), "inc1")
	fail := c.faults.Add(etcdfault.Rule{Op: etcdfault.OpGet, Prefix: keys.Control("n1"), Times: 2, Action: etcdfault.Fail(nil)})
	n := &controlNode{}
	run(t, follow.NewControl(c.watch(), "n1", n.on()).Run)
	tst.Eventually(t, wait, func() bool { return n.count() == 1 }, "the drain request, listed")
	if got := n.all()[0]; got != fmt.Sprintf("drain inc1 @%d", rev) {
		t.Fatalf("handed %q", got)
	}
	if fail.Hits() != 2 {
		t.Fatalf("%d lists failed; want 2 before the one that succeeded", fail.Hits())
	}
}

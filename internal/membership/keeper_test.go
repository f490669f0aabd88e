package membership_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/internal/membership"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// fakeClock is a Member's clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Fresh holds while less than the margin (two thirds of the TTL) has
// passed since the last acknowledged renewal was sent, and not a moment
// longer.
func TestFreshEndsAtTheMargin(t *testing.T) {
	cli := etcd(t)
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	m, _ := setup(t, cli, "inc1", func(c *membership.Config) { c.Now = clock.now })
	t0 := clock.now()
	register(t, m)
	if sent, fresh := m.Renewal(); !sent.Equal(t0) || !fresh {
		t.Fatalf("after Register: renewal sent %s (fresh %v), want the grant's send time %s, fresh", sent, fresh, t0)
	}
	if !m.Deadline().Equal(t0.Add(m.Margin())) {
		t.Fatalf("deadline %s, want %s", m.Deadline(), t0.Add(m.Margin()))
	}
	clock.advance(m.Margin() - time.Nanosecond)
	if !m.Fresh() {
		t.Fatal("not fresh just before the margin")
	}
	clock.advance(time.Nanosecond)
	if m.Fresh() {
		t.Fatal("still fresh at the margin")
	}
}

// A renewal counts from the moment it was sent, taken before the call: a
// renewal whose acknowledgement comes late (here an hour of the member's
// clock later) proves the lease only as of its sending, and the clock is
// then not fresh; the next renewal, sent now, is.
func TestRenewalCountsFromItsSending(t *testing.T) {
	e := tst.StartEtcd(t)
	cli := e.Client(t)
	in := etcdfault.New()
	in.Wrap(cli)
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	m, node := setup(t, cli, "inc1", func(c *membership.Config) { c.Now = clock.now })
	register(t, m)
	clock.advance(time.Second)
	sentAt := clock.now()
	release := make(chan struct{})
	held := in.Add(etcdfault.Rule{Op: etcdfault.OpKeepAliveOnce, Times: 1, Action: etcdfault.DelayUntil(release)})
	run(t, m)
	tst.Eventually(t, wait, func() bool { return held.Hits() == 1 }, "the first renewal to be held")
	clock.advance(time.Hour)
	close(release)
	tst.Eventually(t, wait, func() bool { return node.renewals() >= 1 }, "the held renewal to be acknowledged")
	if sent, fresh := m.Renewal(); !sent.Equal(sentAt) || fresh {
		t.Fatalf("after the late acknowledgement: renewal sent %s (fresh %v), want its send time %s, not fresh", sent, fresh, sentAt)
	}
	tst.Eventually(t, wait, func() bool { return node.renewals() >= 2 }, "the next renewal")
	if sent, fresh := m.Renewal(); !sent.Equal(clock.now()) || !fresh {
		t.Fatalf("after the next renewal: sent %s (fresh %v), want %s, fresh", sent, fresh, clock.now())
	}
}

// While renewals fail the member self-fences (Fresh turns false) before
// etcd could have let the lease expire, without fencing the node (the
// lease is not known lost); once a renewal succeeds it is fresh again.
func TestFailingRenewalsSelfFenceBeforeTheLeaseEnds(t *testing.T) {
	e := tst.StartEtcd(t)
	cli, plain := e.Client(t), e.Client(t)
	in := etcdfault.New()
	in.Wrap(cli)
	// A TTL long enough that etcd reports at least a second left at the
	// margin (it reports whole seconds).
	m, node := setup(t, cli, "inc1", func(c *membership.Config) { c.TTL = 4 * time.Second })
	register(t, m)
	run(t, m)
	failing := in.Add(etcdfault.Rule{Op: etcdfault.OpKeepAliveOnce, Action: etcdfault.Fail(nil)})
	tst.Eventually(t, wait, func() bool { return !m.Fresh() }, "the member to self-fence")
	if !leaseLive(t, plain, m.Lease()) {
		t.Fatal("the lease ended before the member self-fenced")
	}
	if failing.Hits() == 0 || node.count("fence") != 0 {
		t.Fatalf("%d failed renewals, %d fences: want failures and no fence", failing.Hits(), node.count("fence"))
	}
	renewed := node.renewals()
	failing.Remove()
	tst.Eventually(t, wait, func() bool { return m.Fresh() && node.renewals() > renewed }, "a renewal to succeed")
}

// A lease etcd no longer knows makes the node forget what it held (Fence),
// then register again under a new lease and re-adopt (Rejoined), in that
// order; the new registration is the member's, newer than the loss.
func TestLostLeaseFencesAndRejoins(t *testing.T) {
	cli := etcd(t)
	m, node := setup(t, cli, "inc1", nil)
	register(t, m)
	old := m.Lease()
	run(t, m)
	revoked, err := cli.Revoke(ctxFor(t), old)
	if err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, wait, func() bool { return node.count("rejoined") == 1 }, "the member to rejoin")
	want := []string{"registered", "fence", "registered", "rejoined"}
	if got := node.called(); !slices.Equal(got, want) {
		t.Fatalf("the node was told %v, want %v", got, want)
	}
	_, lease, resp := registration(t, cli)
	if lease == old || lease != m.Lease() || m.RegisteredRev() <= revoked.Header.Revision || resp.Kvs[0].ModRevision != m.RegisteredRev() {
		t.Fatalf("after the rejoin: registration under %d at %d; member %d at %d; the old lease %d ended at %d",
			lease, resp.Kvs[0].ModRevision, m.Lease(), m.RegisteredRev(), old, revoked.Header.Revision)
	}
	if !m.Fresh() {
		t.Fatal("not fresh after the rejoin")
	}
}

// A re-adoption that fails makes the member register again (under yet
// another lease, the failed attempt's revoked) and re-adopt again.
func TestRejoinRetriesUntilTheNodeReadopts(t *testing.T) {
	cli := etcd(t)
	m, node := setup(t, cli, "inc1", nil)
	node.rejoinFails = 1
	register(t, m)
	run(t, m)
	if _, err := cli.Revoke(ctxFor(t), m.Lease()); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, wait, func() bool { return node.count("rejoined") == 1 }, "the member to rejoin")
	want := []string{"registered", "fence", "registered", "rejoin failed", "registered", "rejoined"}
	if got := node.called(); !slices.Equal(got, want) {
		t.Fatalf("the node was told %v, want %v", got, want)
	}
	if _, lease, _ := registration(t, cli); lease != m.Lease() || !leaseLive(t, cli, lease) {
		t.Fatalf("registration under %d, the member's lease %d: want the member's, live", lease, m.Lease())
	}
}

// Check renews at once: with the registration in place that is a renewal
// and nothing else; with the registration gone while the lease lives on
// (etcd ended it early, or it was deleted), the member rejoins as if the
// lease were lost.
func TestCheckRenewsAndNoticesAGoneRegistration(t *testing.T) {
	cli := etcd(t)
	// A renewal period (a quarter of the TTL) longer than the test: every
	// renewal seen is one Check asked for.
	m, node := setup(t, cli, "inc1", func(c *membership.Config) { c.TTL = 4 * time.Minute })
	register(t, m)
	old := m.Lease()
	run(t, m)
	m.Check()
	tst.Eventually(t, wait, func() bool { return node.renewals() == 1 }, "the renewal Check asked for")
	if got := node.called(); !slices.Equal(got, []string{"registered"}) || m.Lease() != old {
		t.Fatalf("after a Check of an intact registration: the node was told %v, lease %d (was %d); want nothing more", got, m.Lease(), old)
	}
	if _, err := cli.Delete(ctxFor(t), key); err != nil {
		t.Fatal(err)
	}
	m.Check()
	tst.Eventually(t, wait, func() bool { return node.count("rejoined") == 1 }, "the member to rejoin")
	if got, want := node.called(), []string{"registered", "fence", "registered", "rejoined"}; !slices.Equal(got, want) {
		t.Fatalf("the node was told %v, want %v", got, want)
	}
	if _, lease, _ := registration(t, cli); lease == 0 || lease == old || lease != m.Lease() {
		t.Fatalf("registration under %d, member %d, old %d: want the member's new lease", lease, m.Lease(), old)
	}
}

// A lease lost while the node stops fences the node and is not taken
// again: Run returns, and nothing registers.
func TestLeaseLostWhileStoppingIsNotTakenAgain(t *testing.T) {
	cli := etcd(t)
	m, node := setup(t, cli, "inc1", nil)
	register(t, m)
	node.stopping.Store(true)
	done := run(t, m)
	if _, err := cli.Revoke(ctxFor(t), m.Lease()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("Run did not return after the lease was lost while stopping")
	}
	if got, want := node.called(), []string{"registered", "fence"}; !slices.Equal(got, want) {
		t.Fatalf("the node was told %v, want %v", got, want)
	}
	if rec, _, _ := registration(t, cli); rec != nil {
		t.Fatalf("registered again while stopping: %v", rec)
	}
}

// A node that lost its lease while another incarnation took its name does
// not take it back: it is told it was replaced, Run returns, and the other
// incarnation's record is left alone.
func TestReplacedWhileTheLeaseWasLost(t *testing.T) {
	cli := etcd(t)
	m, node := setup(t, cli, "inc1", nil)
	register(t, m)
	own := m.Lease()
	done := run(t, m)
	other := putRecord(t, cli, "newer", "")
	if _, err := cli.Revoke(ctxFor(t), own); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("Run did not return once the node was replaced")
	}
	node.mu.Lock()
	replaced := node.replaced
	node.mu.Unlock()
	if !errors.Is(replaced, membership.ErrReplaced) {
		t.Fatalf("the node was told it was replaced with %v, want ErrReplaced", replaced)
	}
	if got, want := node.called(), []string{"registered", "fence"}; !slices.Equal(got, want) {
		t.Fatalf("the node was told %v, want %v", got, want)
	}
	if rec, lease, _ := registration(t, cli); rec.Incarnation != "newer" || lease != other {
		t.Fatalf("registration of %s under %d, want the newer incarnation's under %d", rec.Incarnation, lease, other)
	}
}

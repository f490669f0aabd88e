package membership_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/internal/membership"
	"github.com/taskd/taskd/internal/writepath"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// A registration writes the node's record under a new lease, and the
// lease, the registration's revision and the renewal clock become the
// Member's together: the grant's send time starts the clock, the margin
// is two thirds of the TTL, and the node is told once.
func TestRegisterWritesTheRecordUnderANewLease(t *testing.T) {
	cli := etcd(t)
	m, node := setup(t, cli, "inc1", nil)
	if m.Lease() != 0 || m.RegisteredRev() != 0 || m.Fresh() {
		t.Fatalf("before Register: lease %d, rev %d, fresh %v; want none, not fresh", m.Lease(), m.RegisteredRev(), m.Fresh())
	}
	before := time.Now()
	register(t, m)
	after := time.Now()

	rec, lease, resp := registration(t, cli)
	if rec == nil || rec.Incarnation != "inc1" || rec.Name != name {
		t.Fatalf("registration %v, want the node's record", rec)
	}
	if lease == 0 || lease != m.Lease() || resp.Kvs[0].ModRevision != m.RegisteredRev() {
		t.Fatalf("registration under lease %d at %d; the member holds lease %d at %d",
			lease, resp.Kvs[0].ModRevision, m.Lease(), m.RegisteredRev())
	}
	if l, rev := m.Registration(); l != lease || rev != resp.Kvs[0].ModRevision {
		t.Fatalf("Registration() = %d, %d; want %d, %d", l, rev, lease, resp.Kvs[0].ModRevision)
	}
	if !leaseLive(t, cli, lease) {
		t.Fatal("the registration's lease is not live")
	}
	sent, fresh := m.Renewal()
	if !fresh || !m.Fresh() || sent.Before(before) || sent.After(after) {
		t.Fatalf("renewal sent at %s (fresh %v), want between %s and %s, fresh", sent, fresh, before, after)
	}
	if m.Margin() != ttl*2/3 || !m.Deadline().Equal(sent.Add(ttl*2/3)) {
		t.Fatalf("margin %s, deadline %s; want %s, the send time plus it", m.Margin(), m.Deadline(), ttl*2/3)
	}
	if n := node.count("registered"); n != 1 {
		t.Fatalf("the node was told of %d registrations, want 1", n)
	}
	if !m.Owns(resp) {
		t.Fatal("Owns of the registration read now: want true")
	}
	if m.Key() != key {
		t.Fatalf("Key() = %q, want %q", m.Key(), key)
	}
}

// RegisteredCmp holds while the registration is under the member's lease,
// and fails once another process wrote the record; Owns then says no.
func TestRegisteredCmpFollowsTheRecordsLease(t *testing.T) {
	cli := etcd(t)
	m, _ := setup(t, cli, "inc1", nil)
	register(t, m)
	w := writepath.NewWriter(cli)
	if resp, err := w.Commit(ctxFor(t), writepath.Txn{If: []clientv3.Cmp{m.RegisteredCmp()}}); err != nil || !resp.Succeeded {
		t.Fatalf("RegisteredCmp on the member's registration: %v (succeeded %v), want it to hold", err, resp != nil && resp.Succeeded)
	}
	putRecord(t, cli, "other", "")
	if resp, err := w.Commit(ctxFor(t), writepath.Txn{If: []clientv3.Cmp{m.RegisteredCmp()}}); err != nil || resp.Succeeded {
		t.Fatalf("RegisteredCmp on another process's record: %v (succeeded %v), want it to fail", err, resp != nil && resp.Succeeded)
	}
	_, _, resp := registration(t, cli)
	if m.Owns(resp) {
		t.Fatal("Owns of another process's record: want false")
	}
	if m.Owns(&clientv3.GetResponse{}) {
		t.Fatal("Owns of no record: want false")
	}
}

// An earlier incarnation's record that no live process answers for is
// replaced at once, and its lease revoked (nothing waits for it to lapse).
func TestRegisterReplacesAnEarlierIncarnationAtOnce(t *testing.T) {
	cli := etcd(t)
	old := putRecord(t, cli, "old", "") // announces no address: never found live
	m, _ := setup(t, cli, "inc1", nil)
	register(t, m)
	rec, lease, _ := registration(t, cli)
	if rec.Incarnation != "inc1" || lease == old {
		t.Fatalf("registration of %s under lease %d, want inc1's under a new lease", rec.Incarnation, lease)
	}
	if leaseLive(t, cli, old) {
		t.Fatal("the earlier incarnation's lease is still live")
	}
}

// A node registering again under its own incarnation (its start retried)
// replaces its own record and revokes the lease it granted before.
func TestRegisterAgainReplacesTheOwnLease(t *testing.T) {
	cli := etcd(t)
	m, node := setup(t, cli, "inc1", nil)
	register(t, m)
	first, firstRev := m.Registration()
	register(t, m)
	_, lease, resp := registration(t, cli)
	if lease == first || lease != m.Lease() || m.RegisteredRev() <= firstRev || resp.Kvs[0].ModRevision != m.RegisteredRev() {
		t.Fatalf("second registration under lease %d at %d (first %d at %d)", m.Lease(), m.RegisteredRev(), first, firstRev)
	}
	if leaseLive(t, cli, first) {
		t.Fatal("the first lease is still live")
	}
	if n := node.count("registered"); n != 2 {
		t.Fatalf("the node was told of %d registrations, want 2", n)
	}
}

// A registration fails, and the member keeps nothing of it, when another
// process writes the record between the member's read and its write.
func TestRegisterFailsWhenTheRecordChangesMeanwhile(t *testing.T) {
	e := tst.StartEtcd(t)
	cli, plain := e.Client(t), e.Client(t)
	in := etcdfault.New()
	in.Wrap(cli)
	release := make(chan struct{})
	held := in.Add(etcdfault.Rule{Op: etcdfault.OpGrant, Times: 1, Action: etcdfault.DelayUntil(release)})
	m, node := setup(t, cli, "inc1", nil)
	errc := make(chan error, 1)
	go func() { errc <- m.Register(ctxFor(t)) }()
	tst.Eventually(t, wait, func() bool { return held.Hits() == 1 }, "the grant to be held")
	putRecord(t, plain, "other", "")
	close(release)
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), "another process wrote its record meanwhile") {
		t.Fatalf("Register with the record written meanwhile: %v", err)
	}
	if m.Lease() != 0 || m.RegisteredRev() != 0 || m.Fresh() || node.count("registered") != 0 {
		t.Fatalf("after a failed registration: lease %d, rev %d, fresh %v, %d told; want nothing kept",
			m.Lease(), m.RegisteredRev(), m.Fresh(), node.count("registered"))
	}
	if rec, _, _ := registration(t, cli); rec.Incarnation != "other" {
		t.Fatalf("registration of %s, want the other process's left alone", rec.Incarnation)
	}
}

// Publish rewrites the record as the node encodes it now, under the same
// lease; once another process holds the record, Publish leaves it alone
// and says the registration is gone.
func TestPublishRewritesTheRecordUnderTheLease(t *testing.T) {
	cli := etcd(t)
	m, node := setup(t, cli, "inc1", nil)
	register(t, m)
	node.setAddress("127.0.0.1:1")
	if err := m.Publish(ctxFor(t)); err != nil {
		t.Fatalf("publish: %v", err)
	}
	rec, lease, _ := registration(t, cli)
	if rec.Address != "127.0.0.1:1" || lease != m.Lease() {
		t.Fatalf("published record %v under lease %d, want the new address under %d", rec, lease, m.Lease())
	}
	other := putRecord(t, cli, "other", "")
	node.setAddress("127.0.0.1:2")
	if err := m.Publish(ctxFor(t)); !errors.Is(err, membership.ErrRegistrationGone) {
		t.Fatalf("publish over another process's record: %v, want ErrRegistrationGone", err)
	}
	if rec, lease, _ := registration(t, cli); rec.Incarnation != "other" || lease != other {
		t.Fatalf("registration %v under %d, want the other process's left alone", rec, lease)
	}
}

// Revoke ends the lease and with it the registration; a lease already
// gone is reported as etcd says it.
func TestRevokeEndsTheRegistration(t *testing.T) {
	cli := etcd(t)
	m, _ := setup(t, cli, "inc1", nil)
	register(t, m)
	lease := m.Lease()
	if err := m.Revoke(ctxFor(t)); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if rec, _, _ := registration(t, cli); rec != nil || leaseLive(t, cli, lease) {
		t.Fatalf("after Revoke: registration %v, lease live %v; want neither", rec, leaseLive(t, cli, lease))
	}
	if err := m.Revoke(ctxFor(t)); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("revoke of a lease already gone: %v, want etcd's ErrLeaseNotFound", err)
	}
}

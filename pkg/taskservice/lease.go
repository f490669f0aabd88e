package taskservice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/backoff"
	"github.com/taskd/taskd/internal/writepath"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file is the node's liveness: its registration under a lease, the
// renewals, and self-fencing (contract §2.4).
//
// Guarantee: a run starts only while the last acknowledged renewal was
// *sent* less than two thirds of the TTL ago. etcd extends a lease from the
// moment it handles the renewal, which is after it was sent, so the lease
// cannot have expired while the node still starts runs.

// errReplaced reports that another incarnation took over the node's name.
var errReplaced = errors.New("replaced by a newer incarnation of the same name")

// errRegistrationGone reports that the node's record is no longer under
// its lease: the lease lapsed, or another incarnation wrote the record.
var errRegistrationGone = errors.New("the record is no longer under this node's lease")

// register grants a lease and writes the node's record under it. A record
// left by an earlier incarnation of the same name is replaced and its lease
// revoked at once, so nothing waits for it to expire, unless that
// incarnation is still live (liveness_probe.go): then register refuses with
// ErrNameInUse, or with Config.Replace takes the name over (the replaced
// process finds its lease gone and stops). When rejoining (the node lost its
// own lease), a record of another incarnation is left alone and errReplaced
// returned.
func (n *Node) register(ctx context.Context, rejoining bool) error {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	key := n.keys.Node(n.cfg.Name)
	old, err := n.cli.Get(cctx, key)
	if err != nil {
		return fmt.Errorf("read registration of %s: %w", n.cfg.Name, err)
	}
	var prev storev1.NodeRecord
	oldRev := int64(0)
	if len(old.Kvs) > 0 {
		_ = proto.Unmarshal(old.Kvs[0].Value, &prev)
		oldRev = old.Kvs[0].ModRevision
		if rejoining && prev.Incarnation != n.incarnation {
			return fmt.Errorf("node %s: %w (%s)", n.cfg.Name, errReplaced, prev.Incarnation)
		}
		if !rejoining && prev.Incarnation != n.incarnation && !n.cfg.Replace {
			if err := n.refuseLive(cctx, &prev, clientv3.LeaseID(leaseOf(old))); err != nil {
				return err
			}
		}
	}
	sent := time.Now()
	lease, err := n.cli.Grant(cctx, int64((n.cfg.LeaseTTL+time.Second-1)/time.Second))
	if err != nil {
		return fmt.Errorf("grant node lease: %w", err)
	}
	b, err := n.record()
	if err != nil {
		return err
	}
	resp, err := n.writer.Commit(cctx, n.shapes.Register(oldRev, writepath.Lease(lease.ID), b))
	if err != nil {
		return fmt.Errorf("register node %s: %w", n.cfg.Name, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("register node %s: another process wrote its record meanwhile", n.cfg.Name)
	}
	// The new lease and the registration's revision become the node's
	// together, once the record is written: a start planned before that is
	// fenced on the old lease (and fails); one planned after it, under an
	// epoch older than this registration, is refused until re-mapped.
	n.mu.Lock()
	n.leaseID = lease.ID
	n.renewedAt = sent
	n.registeredRev = resp.Header.Revision
	n.mu.Unlock()
	if oldLease := clientv3.LeaseID(leaseOf(old)); oldLease != 0 && oldLease != lease.ID {
		if _, err := n.cli.Revoke(cctx, oldLease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			n.log.Warn("revoke lease of previous incarnation", "previous", prev.Incarnation, "error", err)
		} else if prev.Incarnation != n.incarnation {
			n.log.Info("freed previous incarnation", "previous", prev.Incarnation)
		}
	}
	// The calendar references of the non-durable tasks held here were
	// under the old lease (or none, before the first registration).
	return n.restoreLocalRefs(ctx)
}

// record encodes the node's registration.
func (n *Node) record() ([]byte, error) {
	n.mu.Lock()
	rec := &storev1.NodeRecord{
		Name:        n.cfg.Name,
		Incarnation: n.incarnation,
		Address:     n.cfg.Address,
		State:       n.state,
		StartedAt:   timestamppb.New(n.startedAt),
		Kinds:       n.Kinds(),
	}
	if !n.dispatchStart.IsZero() {
		rec.DispatchStart = timestamppb.New(n.dispatchStart)
	}
	n.mu.Unlock()
	b, err := proto.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode node record: %w", err)
	}
	return b, nil
}

// publish rewrites the node's record (its state changed), only while the
// record is still under this node's lease.
func (n *Node) publish(ctx context.Context) error {
	// One publish at a time: each puts the record as it stands when
	// encoded, so a later one must not be overtaken by an earlier one.
	n.publishMu.Lock()
	defer n.publishMu.Unlock()
	b, err := n.record()
	if err != nil {
		return err
	}
	n.mu.Lock()
	lease := n.leaseID
	n.mu.Unlock()
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	resp, err := n.writer.Commit(cctx, n.shapes.Publish(writepath.Lease(lease), b))
	if err != nil {
		return fmt.Errorf("publish node %s: %w", n.cfg.Name, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("publish node %s: %w", n.cfg.Name, errRegistrationGone)
	}
	return nil
}

// leaseLoop renews the lease every quarter of its TTL. A renewal that fails
// for a while makes the node stop starting runs (leaseFresh); a lease that
// etcd no longer knows makes it forget its identities and register again.
// If another incarnation of the same name registered meanwhile, the node
// stops: it was replaced. It runs until Stop has seen the last run's outcome
// committed (Node.keeper); a lease lost while the node stops is not taken
// again.
func (n *Node) leaseLoop(ctx context.Context) {
	every := n.cfg.LeaseTTL / 4
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		verify := false
		select {
		case <-timer.C:
		case <-n.leaseWake:
			// A start found the registration not under this node's lease:
			// renew now, and look at the registration itself too.
			verify = true
			if !timer.Stop() {
				<-timer.C
			}
		case <-ctx.Done():
			return
		}
		n.mu.Lock()
		lease := n.leaseID
		n.mu.Unlock()
		sent := time.Now()
		kctx, cancel := context.WithTimeout(ctx, every)
		resp, err := n.cli.KeepAliveOnce(kctx, lease)
		cancel()
		if err == nil && resp.TTL > 0 && verify && !n.registrationHeld(ctx, lease) {
			resp.TTL = 0 // the lease lives on, but the registration is gone: rejoin
		}
		switch {
		case err == nil && resp.TTL > 0:
			n.mu.Lock()
			if sent.After(n.renewedAt) {
				n.renewedAt = sent
			}
			n.mu.Unlock()
			n.kick()
		case ctx.Err() != nil:
			return
		case errors.Is(err, rpctypes.ErrLeaseNotFound) || (err == nil && resp.TTL <= 0):
			if n.life.Err() != nil {
				// Stopping: the runs still in flight can no longer commit;
				// they are cancelled, and nothing registers again.
				n.log.Warn("node lease lost while stopping; cancelling the runs in flight")
				n.fence()
				return
			}
			n.log.Warn("node lease lost; forgetting identities and registering again")
			n.fence()
			if err := n.rejoin(ctx); err != nil {
				n.log.Error("node stops", "reason", err)
				n.stopAsync()
				return
			}
		default:
			n.log.Warn("lease renewal failed", "error", err, "fresh", n.leaseFresh())
		}
		timer.Reset(every)
	}
}

// leaseFresh reports whether a run may start: the last acknowledged
// renewal was sent within two thirds of the TTL.
func (n *Node) leaseFresh() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leaseFreshLocked()
}

func (n *Node) leaseFreshLocked() bool { return time.Since(n.renewedAt) < n.leaseMargin() }

// leaseMargin is how long after an acknowledged renewal was sent the node
// may still start runs: two thirds of the TTL, leaving a third for clock
// rate differences and for the start itself.
func (n *Node) leaseMargin() time.Duration { return n.cfg.LeaseTTL * 2 / 3 }

// fence forgets every identity, and cancels the handlers of the runs in
// flight (their results can no longer be committed by this node, and a new
// owner may run them again): nothing new starts until the identities are
// adopted again.
func (n *Node) fence() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, st := range n.idents {
		n.dropIdentityLocked(st)
	}
	n.fenceFlightsLocked(errLeaseLost)
}

// rejoin registers again and re-adopts the identities still mapped to this
// name, retrying until it succeeds, the node stops, or it was replaced.
func (n *Node) rejoin(ctx context.Context) error {
	bo := backoff.New(100*time.Millisecond, 2*time.Second)
	for ctx.Err() == nil {
		err := n.register(ctx, true)
		if errors.Is(err, errReplaced) {
			return err
		}
		if err == nil {
			err = n.adoptOwned(ctx)
		}
		if err == nil {
			n.log.Info("rejoined after losing the lease", "identities", n.ownedCount())
			n.kick()
			return nil
		}
		n.log.Warn("rejoin failed; retrying", "error", err)
		if !bo.Wait(ctx) {
			return nil
		}
	}
	return nil
}

// registeredCmp holds while this node's registration is still under its
// current lease. Every Txn that maps an identity to this node carries it: a
// replaced or expired incarnation can then never map an identity to itself
// (where nothing would run its tasks).
func (n *Node) registeredCmp() clientv3.Cmp {
	n.mu.Lock()
	lease := n.leaseID
	n.mu.Unlock()
	return clientv3.Compare(clientv3.LeaseValue(n.keys.Node(n.cfg.Name)), "=", int64(lease))
}

// ownsRegistration reports whether a read of this node's registration (in
// a Txn's Else branch) shows it under the node's current lease.
func (n *Node) ownsRegistration(r *clientv3.GetResponse) bool {
	kvs := r.Kvs
	n.mu.Lock()
	lease := n.leaseID
	n.mu.Unlock()
	return len(kvs) > 0 && kvs[0].Lease == int64(lease)
}

// registrationHeld reports whether the node's registration is under lease;
// true too when it cannot be read (the renewal decides then).
func (n *Node) registrationHeld(ctx context.Context, lease clientv3.LeaseID) bool {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	resp, err := n.cli.Get(cctx, n.keys.Node(n.cfg.Name))
	if err != nil {
		return true
	}
	return len(resp.Kvs) > 0 && resp.Kvs[0].Lease == int64(lease)
}

// checkLease asks the lease keeper to renew now, so that a lost lease is
// noticed (and the node registers again) without waiting for the next
// renewal.
func (n *Node) checkLease() {
	select {
	case n.leaseWake <- struct{}{}:
	default:
	}
}

func leaseOf(resp *clientv3.GetResponse) int64 {
	if len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].Lease
}

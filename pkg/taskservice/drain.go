package taskservice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/pkg/identity"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Drain hands the node's identities to other RUNNING nodes and stops it
// (contract §3.1): the node turns DRAINING and starts no more runs; each
// identity with no run in flight is moved at once (so its runs go on at
// once on its new owner), the others as their runs finish, and after
// DrainTimeout the rest regardless (their runs in flight will be DROPPED
// and run again by the new owner). With no other RUNNING node the
// identities stay mapped to this node's name for its next start, and the
// node stops once its runs in flight have ended (within DrainTimeout):
// Stop waits for them, renewing the lease meanwhile. ctx bounds the whole
// drain.
func (n *Node) Drain(ctx context.Context) error {
	n.mu.Lock()
	if !n.started || n.stopped || n.draining {
		n.mu.Unlock()
		return nil
	}
	n.draining = true
	n.state = taskdv1.NodeState_NODE_STATE_DRAINING
	n.mu.Unlock()
	n.kick()
	if err := n.member.Publish(ctx); err != nil {
		n.log.Warn("publish DRAINING", "error", err)
	}
	n.log.Info("draining", "identities", n.ownedCount(), "drain_timeout", n.cfg.DrainTimeout)
	deadline := time.Now().Add(n.cfg.DrainTimeout)
	err := n.handOver(ctx, deadline)
	switch {
	case errors.Is(err, errNoTarget):
		n.log.Info("drain: no other RUNNING node; identities stay mapped here for the next start", "identities", n.ownedCount())
		err = nil
	case err != nil:
		n.log.Warn("drain: some identities stay mapped here", "error", err)
	}
	sctx, cancel := context.WithDeadline(ctx, deadline) // ctx bounds the whole drain, Stop too
	defer cancel()
	return errors.Join(err, n.Stop(sctx))
}

// handOver moves the identities away until none is left, or no node can
// take them, or ctx ends. An identity that could not be moved (its target
// went away meanwhile) stays this node's and is tried again with the
// candidates read afresh.
func (n *Node) handOver(ctx context.Context, deadline time.Time) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		late := !time.Now().Before(deadline)
		ready, left := n.handOverSet(late)
		if left == 0 {
			return nil
		}
		if len(ready) > 0 {
			moved, err := n.moveAway(ctx, ready)
			if err != nil {
				return err
			}
			if moved > 0 {
				continue
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// handOverSet returns the identities that can be moved now (no run in
// flight, or all of them once late) and how many are left in all.
func (n *Node) handOverSet(late bool) ([]identity.Owner, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var ready []identity.Owner
	for id, st := range n.idents {
		if late || n.identityFlightsLocked(id) == 0 {
			ready = append(ready, identity.Owner{Identity: id, Mapped: true, Node: n.cfg.Name,
				Incarnation: n.incarnation, Epoch: st.epoch})
		}
	}
	return ready, len(n.idents)
}

// moveAway moves identities of this node to the least-loaded RUNNING
// nodes, in batched Txns, forgets the moved ones here, and returns how many
// left this node (moved, or found owned elsewhere).
func (n *Node) moveAway(ctx context.Context, owners []identity.Owner) (int, error) {
	cs, err := n.cluster.Candidates(ctx)
	if err != nil {
		return 0, err
	}
	live := placement.Running(cs, n.cfg.Name)
	if len(live) == 0 {
		return 0, fmt.Errorf("%d identities: %w", len(owners), errNoTarget)
	}
	batch := n.cluster.MovesPerTxn()
	gone := 0
	for len(owners) > 0 {
		k := min(batch, len(owners))
		var moves []placement.Move
		for _, o := range owners[:k] {
			moves = append(moves, placement.Move{From: o, To: placement.LeastLoaded(live)})
		}
		owners = owners[k:]
		rev, ok, err := n.cluster.CommitMoves(ctx, moves)
		if err != nil {
			return gone, err
		}
		if ok {
			for _, m := range moves {
				n.identityLeft(m.From.Identity, rev)
			}
			gone += len(moves)
			continue
		}
		// A compare failed: an identity's epoch moved, or a target's
		// registration changed. Move them one by one and look at each
		// failure.
		for _, m := range moves {
			rev1, ok1, err := n.cluster.CommitMoves(ctx, []placement.Move{m})
			if err != nil {
				return gone, err
			}
			if ok1 {
				n.identityLeft(m.From.Identity, rev1)
				gone++
				continue
			}
			left, err := n.recheckOwned(ctx, m.From)
			if err != nil {
				return gone, err
			}
			if left {
				gone++
			}
		}
	}
	return gone, nil
}

// recheckOwned reads the mapping of an identity a move could not take: if
// it is no longer this incarnation's, it is forgotten here (left is true);
// if it is ours under another epoch, it is read again; if it is as it was
// (the target changed), it stays for the next attempt.
func (n *Node) recheckOwned(ctx context.Context, from identity.Owner) (left bool, err error) {
	cctx, cancel := n.etcdCtx(ctx)
	owner, err := n.idmap.Get(cctx, from.Identity)
	cancel()
	if err != nil {
		return false, err
	}
	switch {
	case !owner.Mapped || owner.Node != n.cfg.Name || owner.Incarnation != n.incarnation:
		n.identityLeft(from.Identity, owner.Epoch)
		return true, nil
	case owner.Epoch != from.Epoch:
		n.repair(from.Identity)
	}
	return false, nil
}

// errNoTarget reports that no other node can take identities.
var errNoTarget = errors.New("no other RUNNING node to take them")

// drainRequested starts a drain asked for through the control key (this
// node's follow.Control hands it the request), and removes the request. A request meant for an earlier incarnation of this
// name (left behind when it died) is only removed.
func (n *Node) drainRequested(ctx context.Context, incarnation string, rev int64) {
	cctx, cancel := n.etcdCtx(ctx)
	_, _ = n.writer.Commit(cctx, n.shapes.TakeDrainRequest(rev))
	cancel()
	if incarnation != n.incarnation {
		return
	}
	n.log.Info("drain requested")
	// Detached, not a loop: Drain ends by stopping the node, and Stop waits
	// for the loops. The drain's context ends when the stop is over.
	n.detached.Go("drain", func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, n.cfg.DrainTimeout+time.Minute)
		defer cancel()
		if err := n.Drain(ctx); err != nil {
			n.log.Warn("drain", "error", err)
		}
	})
}

// DrainNode asks the named node to drain (through its control key, so any
// node can ask), and returns the node as registered.
func (n *Node) DrainNode(ctx context.Context, node string) (*taskdv1.Node, error) {
	nodes, err := n.api.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	for _, nd := range nodes {
		if nd.Name != node {
			continue
		}
		if nd.State != taskdv1.NodeState_NODE_STATE_RUNNING && nd.State != taskdv1.NodeState_NODE_STATE_DRAINING {
			return nil, fmt.Errorf("node %q is %s: %w", node, nd.State, ErrFailedPrecondition)
		}
		cctx, cancel := n.etcdCtx(ctx)
		defer cancel()
		if _, err := n.cli.Put(cctx, n.keys.DrainRequest(node), nd.Incarnation); err != nil {
			return nil, fmt.Errorf("request drain of %s: %w", node, err)
		}
		return nd, nil
	}
	return nil, fmt.Errorf("node %q is not registered: %w", node, ErrNotFound)
}

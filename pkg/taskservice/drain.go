package taskservice

import (
	"context"
	"errors"
	"time"

	"github.com/taskd/taskd/internal/ownership"
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
	n.d.Lock()
	if !n.life.Live() || n.d.Phase.Draining {
		n.d.Unlock()
		return nil
	}
	n.d.Phase.Draining = true
	n.d.Phase.State = taskdv1.NodeState_NODE_STATE_DRAINING
	n.d.Unlock()
	n.d.Kick()
	if err := n.member.Publish(ctx); err != nil {
		n.log.Warn("publish DRAINING", "error", err)
	}
	n.log.Info("draining", "identities", n.ownedCount(), "drain_timeout", n.cfg.DrainTimeout)
	deadline := time.Now().Add(n.cfg.DrainTimeout)
	err := n.own.HandOver(ctx, deadline)
	switch {
	case errors.Is(err, ownership.ErrNoTarget):
		n.log.Info("drain: no other RUNNING node; identities stay mapped here for the next start", "identities", n.ownedCount())
		err = nil
	case err != nil:
		n.log.Warn("drain: some identities stay mapped here", "error", err)
	}
	sctx, cancel := context.WithDeadline(ctx, deadline) // ctx bounds the whole drain, Stop too
	defer cancel()
	return errors.Join(err, n.Stop(sctx))
}

// drainRequested starts a drain asked for through the control key (this
// node's follow.Control hands it the request), and removes the request. A request meant for an earlier incarnation of this
// name (left behind when it died) is only removed.
func (n *Node) drainRequested(ctx context.Context, incarnation string, rev int64) {
	if !n.own.TakeDrainRequest(ctx, incarnation, rev) {
		return
	}
	n.log.Info("drain requested")
	// Detached, not a loop: Drain ends by stopping the node, and Stop waits
	// for the loops. The drain's context ends when the stop is over.
	n.life.Detached.Go("drain", func(ctx context.Context) {
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
	return n.api.DrainNode(ctx, node)
}

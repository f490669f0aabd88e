package ownership

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/pkg/identity"
)

// This file is a drain's moves (contract §3.1): the node's identities go
// to the least-loaded other RUNNING nodes, each with no run in flight at
// once, the others as their runs finish, and all of them once the drain is
// late.

// ErrNoTarget reports that no other node can take identities.
var ErrNoTarget = errors.New("no other RUNNING node to take them")

// HandOver moves the identities away until none is left, or no node can
// take them (ErrNoTarget), or ctx ends. An identity that could not be
// moved (its target went away meanwhile) stays this node's and is tried
// again with the candidates read afresh. From deadline on, identities with
// runs in flight move too.
func (h *Holder) HandOver(ctx context.Context, deadline time.Time) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		late := !time.Now().Before(deadline)
		ready, left := h.engine.Movable(late)
		if left == 0 {
			return nil
		}
		if len(ready) > 0 {
			moved, err := h.moveAway(ctx, ready)
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

// moveAway moves identities of this node to the least-loaded RUNNING
// nodes, in batched Txns, has the engine forget the moved ones, and
// returns how many left this node (moved, or found owned elsewhere).
func (h *Holder) moveAway(ctx context.Context, owners []identity.Owner) (int, error) {
	cluster := h.cfg.Cluster
	cs, err := cluster.Candidates(ctx)
	if err != nil {
		return 0, err
	}
	live := placement.Running(cs, h.cfg.Name)
	if len(live) == 0 {
		return 0, fmt.Errorf("%d identities: %w", len(owners), ErrNoTarget)
	}
	batch := cluster.MovesPerTxn()
	gone := 0
	for len(owners) > 0 {
		k := min(batch, len(owners))
		var moves []placement.Move
		for _, o := range owners[:k] {
			moves = append(moves, placement.Move{From: o, To: placement.LeastLoaded(live)})
		}
		owners = owners[k:]
		rev, ok, err := cluster.CommitMoves(ctx, moves)
		if err != nil {
			return gone, err
		}
		if ok {
			for _, m := range moves {
				h.engine.Left(m.From.Identity, rev)
			}
			gone += len(moves)
			continue
		}
		// A compare failed: an identity's epoch moved, or a target's
		// registration changed. Move them one by one and look at each
		// failure.
		for _, m := range moves {
			rev1, ok1, err := cluster.CommitMoves(ctx, []placement.Move{m})
			if err != nil {
				return gone, err
			}
			if ok1 {
				h.engine.Left(m.From.Identity, rev1)
				gone++
				continue
			}
			left, err := h.recheckOwned(ctx, m.From)
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
func (h *Holder) recheckOwned(ctx context.Context, from identity.Owner) (left bool, err error) {
	cctx, cancel := h.etcdCtx(ctx)
	owner, err := h.cfg.Map.Get(cctx, from.Identity)
	cancel()
	if err != nil {
		return false, err
	}
	switch {
	case !h.mine(owner) || owner.Incarnation != h.cfg.Incarnation:
		h.engine.Left(from.Identity, owner.Epoch)
		return true, nil
	case owner.Epoch != from.Epoch:
		h.Repair(from.Identity)
	}
	return false, nil
}

// TakeDrainRequest removes the drain request found in this node's control
// area at rev, and reports whether it was meant for this incarnation (an
// earlier one's, left behind when it died, is only removed).
func (h *Holder) TakeDrainRequest(ctx context.Context, incarnation string, rev int64) bool {
	cctx, cancel := h.etcdCtx(ctx)
	_, _ = h.cfg.Writer.Commit(cctx, h.cfg.Shapes.TakeDrainRequest(rev))
	cancel()
	return incarnation == h.cfg.Incarnation
}

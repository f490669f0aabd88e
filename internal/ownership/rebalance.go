package ownership

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
)

// This file is the source node's side of rebalancing (contract §3.1): the
// placement leader plans how many identities a node gives to which targets
// (internal/placement) and writes that as a request into the node's control area;
// the node itself chooses which of its identities move, since only it
// knows which have a run in flight.
//
// Guarantees:
//   - An identity with a run in flight or armed, with an entry already due,
//     running, thawing or waiting for another node's run, with a handoff
//     entry waiting, or moved away by this node and back within
//     DrainTimeout + RebalanceInterval, is never chosen. The engine marks
//     the chosen ones leaving under its lock in the same critical section
//     that found them idle (Engine.ChooseToMove), and starts no run of a
//     leaving identity, so none starts between the choice and the move. A rebalancing move therefore never leaves a run
//     in flight behind it, and never causes a second execution, however
//     long runs take.
//   - A request acts at most once, and only as it was written by the
//     leadership that wrote it: every move Txn compares the request key's
//     revision (each rewrites the key, marked claimed, so a request the
//     leader replaces meanwhile stops the serving, and the leader never
//     plans on counts that moves of a request being served have changed)
//     and the leader key's creation revision, and each target's
//     registration revision as the leader read it. The request is deleted
//     (compared on its revision) when served.
//   - A request for another incarnation of this node's name, one that does
//     not parse, or one that reaches a node no longer RUNNING is only
//     deleted.
//   - The moves are planned moves (placement.Cluster.CommitMovesTxn),
//     batched, at most the request's count, itself bounded as the request
//     is parsed (placement.ParseRequest).

// RebalanceRequested acts on the request found in this node's request key
// at rev (this node's follow.Control hands it over, from its control area).
func (h *Holder) RebalanceRequested(ctx context.Context, value string, rev int64) {
	req, err := placement.ParseRequest(value)
	switch {
	case err != nil:
		h.log.Warn("deleting a rebalancing request that does not parse", "error", err)
	case req.Source != h.cfg.Incarnation:
		h.log.Debug("deleting a rebalancing request for another incarnation", "incarnation", req.Source)
	case req.Claimed:
		// This node's own mark, left by a serving cut short: the leader's
		// next round replaces it.
		return
	case !h.engine.Running():
		h.log.Debug("deleting a rebalancing request: not RUNNING")
	default:
		moved, cur, err := h.serveRebalance(ctx, req, rev)
		if err != nil && ctx.Err() == nil {
			h.log.Warn("rebalancing request served in part", "moved", moved, "error", err)
		}
		if moved > 0 {
			h.log.Info("rebalanced identities", "moved", moved, "asked", req.Total(), "leader", req.Leader)
		}
		if h.cfg.RebalanceMoves != nil && moved > 0 {
			h.cfg.RebalanceMoves(moved)
		}
		rev = cur
	}
	h.deleteRequest(ctx, rev)
}

// deleteRequest deletes this node's request key if it still stands at rev.
func (h *Holder) deleteRequest(ctx context.Context, rev int64) {
	key := h.cfg.Keys.RebalanceRequest(h.cfg.Name)
	cctx, cancel := h.etcdCtx(ctx)
	defer cancel()
	if _, err := h.cfg.Writer.Commit(cctx, writepath.DeleteAt(key, rev)); err != nil && ctx.Err() == nil {
		h.log.Warn("delete the rebalancing request", "error", err)
	}
}

// serveRebalance chooses and moves the identities req asks for. It
// returns how many moved and the revision the request key stands at if
// this node rewrote it (rev otherwise).
func (h *Holder) serveRebalance(ctx context.Context, req placement.Request, rev int64) (int, int64, error) {
	now := time.Now()
	for id, until := range h.rebalancedAway {
		if now.After(until) {
			delete(h.rebalancedAway, id)
		}
	}
	want := req.Total()
	// Only what is due already holds an identity back: one due during the
	// move is not started here (leaving) and runs on the new owner, late by
	// the move's Txn and its handoff. Waiting for an identity idle through
	// the look-ahead as well would never find one of a task that fires
	// every second, and a busy cluster would never rebalance.
	ids := h.engine.ChooseToMove(2*want+8, now, func(id string) bool {
		_, resting := h.rebalancedAway[id]
		return resting
	})
	defer h.engine.StopLeaving(ids)
	owners, err := h.movableOwners(ctx, &placement.Candidate{Name: h.cfg.Name, Inc: h.cfg.Incarnation}, ids, want)
	if err != nil {
		return 0, rev, err
	}
	var moves []placement.Move
	for _, tg := range req.Targets {
		to := &placement.Candidate{Name: tg.Name, Inc: tg.Inc, Lease: tg.Lease, Rev: tg.Rev}
		for k := 0; k < tg.Count && len(moves) < len(owners); k++ {
			moves = append(moves, placement.Move{From: owners[len(moves)], To: to})
		}
	}
	done, cur, err := h.commitRequested(ctx, req, rev, moves)
	rest := now.Add(h.cfg.DrainTimeout + h.cfg.RebalanceInterval)
	for _, m := range done {
		h.rebalancedAway[m.From.Identity] = rest
		h.engine.Left(m.From.Identity, m.rev) // at once, not at the watch's pace
	}
	return len(done), cur, err
}

// movableOwners reads the mappings of ids, with a count of the handoff
// entries waiting for each at from, and returns up to want of them mapped
// to from's incarnation with none waiting.
func (h *Holder) movableOwners(ctx context.Context, from *placement.Candidate, ids []string, want int) ([]identity.Owner, error) {
	per := max(1, h.cfg.MaxTxnOps/2)
	var out []identity.Owner
	for len(ids) > 0 && len(out) < want {
		chunk := ids[:min(per, len(ids))]
		ids = ids[len(chunk):]
		ops := make([]clientv3.Op, 0, 2*len(chunk))
		for _, id := range chunk {
			ops = append(ops, clientv3.OpGet(h.cfg.Map.Keys().Mapping(id)),
				clientv3.OpGet(h.cfg.Keys.Entries(from.Name, id), clientv3.WithPrefix(), clientv3.WithCountOnly()))
		}
		cctx, cancel := h.etcdCtx(ctx)
		resp, err := h.cfg.Writer.Read(cctx, ops...)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("read mappings of %s: %w", from.Name, err)
		}
		for i, id := range chunk {
			owner, err := identity.OwnerFromResponse(id, (*clientv3.GetResponse)(resp.Responses[2*i].GetResponseRange()))
			pending := resp.Responses[2*i+1].GetResponseRange().GetCount()
			if err != nil || !owner.Mapped || owner.Node != from.Name || owner.Incarnation != from.Inc || pending > 0 {
				continue
			}
			if out = append(out, owner); len(out) == want {
				break
			}
		}
	}
	return out, nil
}

// madeMove is a move made, with the revision of its Txn.
type madeMove struct {
	placement.Move
	rev int64
}

// errRequestGone reports that the request being served was replaced, or
// that the leadership that wrote it ended.
var errRequestGone = errors.New("the rebalancing request was replaced, or its leadership ended")

// commitRequested carries out the moves of req, whose key stands at rev,
// in batched Txns; a batch that fails a compare while the request still
// stands is tried one move at a time, and a move that fails alone is left
// for a later request. It returns the moves made and the revision the
// request key stands at after them.
func (h *Holder) commitRequested(ctx context.Context, req placement.Request, rev int64, moves []placement.Move) ([]madeMove, int64, error) {
	key := h.cfg.Keys.RebalanceRequest(h.cfg.Name)
	leaderKey := h.cfg.Keys.Leader()
	claim := placement.Request{Source: req.Source, LeaderRev: req.LeaderRev, Leader: req.Leader, Claimed: true}.Encode()
	regRev := map[string]int64{}
	for _, tg := range req.Targets {
		regRev[tg.Name] = tg.Rev
	}
	var done []madeMove
	try := func(part []placement.Move) (ok bool, err error) {
		cmps := []clientv3.Cmp{writepath.At(key, rev), writepath.Created(leaderKey, req.LeaderRev)}
		seen := map[string]bool{}
		for _, m := range part {
			if !seen[m.To.Name] {
				seen[m.To.Name] = true
				cmps = append(cmps, writepath.At(h.cfg.Keys.Node(m.To.Name), regRev[m.To.Name]))
			}
		}
		resp, err := h.cfg.Cluster.CommitMovesTxn(ctx, part, cmps,
			[]clientv3.Op{clientv3.OpPut(key, claim, clientv3.WithIgnoreLease())},
			[]clientv3.Op{clientv3.OpGet(key, clientv3.WithKeysOnly()), clientv3.OpGet(leaderKey, clientv3.WithKeysOnly())})
		if err != nil {
			return false, err
		}
		if resp.Succeeded {
			rev = resp.Header.Revision
			for _, m := range part {
				done = append(done, madeMove{m, rev})
			}
			return true, nil
		}
		k, l := resp.Responses[0].GetResponseRange().GetKvs(), resp.Responses[1].GetResponseRange().GetKvs()
		if len(k) != 1 || k[0].ModRevision != rev || len(l) != 1 || l[0].CreateRevision != req.LeaderRev {
			return false, errRequestGone
		}
		return false, nil
	}
	batch := h.cfg.Cluster.MovesPerTxn()
	for len(moves) > 0 {
		part := moves[:min(batch, len(moves))]
		moves = moves[len(part):]
		ok, err := try(part)
		if err != nil {
			return done, rev, err
		}
		if ok || len(part) == 1 {
			continue
		}
		for _, m := range part {
			if _, err := try([]placement.Move{m}); err != nil {
				return done, rev, err
			}
		}
	}
	return done, rev, nil
}

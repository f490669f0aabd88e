package taskservice

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
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
//     DrainTimeout + RebalanceInterval, is never chosen. The chosen ones are marked leaving under n.mu in the same
//     critical section that found them idle, and no run of a leaving
//     identity starts (start, start.go), so none starts between the
//     choice and the move. A rebalancing move therefore never leaves a run
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

// rebalanceRequested acts on the request found in this node's request key
// at rev (this node's follow.Control hands it over, from its control area).
func (n *Node) rebalanceRequested(ctx context.Context, value string, rev int64) {
	req, err := placement.ParseRequest(value)
	switch {
	case err != nil:
		n.log.Warn("deleting a rebalancing request that does not parse", "error", err)
	case req.Source != n.incarnation:
		n.log.Debug("deleting a rebalancing request for another incarnation", "incarnation", req.Source)
	case req.Claimed:
		// This node's own mark, left by a serving cut short: the leader's
		// next round replaces it.
		return
	case n.State() != taskdv1.NodeState_NODE_STATE_RUNNING:
		n.log.Debug("deleting a rebalancing request: not RUNNING")
	default:
		moved, cur, err := n.serveRebalance(ctx, req, rev)
		if err != nil && ctx.Err() == nil {
			n.log.Warn("rebalancing request served in part", "moved", moved, "error", err)
		}
		if moved > 0 {
			n.log.Info("rebalanced identities", "moved", moved, "asked", req.Total(), "leader", req.Leader)
		}
		n.cfg.Observer.observeRebalance(moved)
		rev = cur
	}
	n.deleteRequest(ctx, rev)
}

// deleteRequest deletes this node's request key if it still stands at rev.
func (n *Node) deleteRequest(ctx context.Context, rev int64) {
	key := n.keys.RebalanceRequest(n.cfg.Name)
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	if _, err := n.writer.Commit(cctx, writepath.DeleteAt(key, rev)); err != nil && ctx.Err() == nil {
		n.log.Warn("delete the rebalancing request", "error", err)
	}
}

// serveRebalance chooses and moves the identities req asks for. It
// returns how many moved and the revision the request key stands at if
// this node rewrote it (rev otherwise).
func (n *Node) serveRebalance(ctx context.Context, req placement.Request, rev int64) (int, int64, error) {
	now := time.Now()
	for id, until := range n.rebalancedAway {
		if now.After(until) {
			delete(n.rebalancedAway, id)
		}
	}
	want := req.Total()
	// Only what is due already holds an identity back: one due during the
	// move is not started here (leaving) and runs on the new owner, late by
	// the move's Txn and its handoff. Waiting for an identity idle through
	// the look-ahead as well would never find one of a task that fires
	// every second, and a busy cluster would never rebalance.
	chosen := n.chooseToMove(2*want+8, now)
	defer n.stopLeaving(chosen)
	ids := make([]string, len(chosen))
	for i, st := range chosen {
		ids[i] = st.name
	}
	owners, err := n.movableOwners(ctx, &placement.Candidate{Name: n.cfg.Name, Inc: n.incarnation}, ids, want)
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
	done, cur, err := n.commitRequested(ctx, req, rev, moves)
	rest := now.Add(n.cfg.DrainTimeout + n.cfg.RebalanceInterval)
	for _, m := range done {
		n.rebalancedAway[m.From.Identity] = rest
		n.identityLeft(m.From.Identity, m.rev) // at once, not at the watch's pace
	}
	return len(done), cur, err
}

// chooseToMove marks leaving and returns up to limit of this node's
// identities that are idle through horizon: no run in flight or armed,
// nothing running, queued to start, thawing or waiting for another node's
// run, no entry due before horizon, not moved away by this node recently.
// It looks at a bounded number of identities, in the map's (random)
// order, so a node mostly busy may give fewer than asked for this round.
func (n *Node) chooseToMove(limit int, horizon time.Time) []*identState {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.draining || n.state != taskdv1.NodeState_NODE_STATE_RUNNING {
		return nil
	}
	busy := map[string]bool{}
	for ref := range n.flights {
		if ref.owned() {
			busy[ref.identity] = true
		}
	}
	var out []*identState
	looked := 0
	for id, st := range n.idents {
		if len(out) == limit || looked == max(1024, 8*limit) {
			break
		}
		looked++
		if _, resting := n.rebalancedAway[id]; resting || st.lost || st.leaving || st.run != nil || busy[id] ||
			!st.quietLocked(horizon) {
			continue
		}
		st.leaving = true
		out = append(out, st)
	}
	return out
}

// quietLocked reports whether none of st's tasks is running, thawing,
// waiting for another node's run, or due before horizon. n.mu held.
func (st *identState) quietLocked(horizon time.Time) bool {
	for e := range st.tasks.all() {
		if e.running || e.thawing || (e.x != nil && e.x.awaitSince != 0) ||
			(e.idx >= 0 && e.due.time().Before(horizon)) {
			return false
		}
	}
	return true
}

// stopLeaving lets the identities chosen and not moved run again.
func (n *Node) stopLeaving(chosen []*identState) {
	if len(chosen) == 0 {
		return
	}
	n.mu.Lock()
	for _, st := range chosen {
		st.leaving = false
	}
	n.mu.Unlock()
	n.kick()
}

// movableOwners reads the mappings of ids, with a count of the handoff
// entries waiting for each at from, and returns up to want of them mapped
// to from's incarnation with none waiting.
func (n *Node) movableOwners(ctx context.Context, from *placement.Candidate, ids []string, want int) ([]identity.Owner, error) {
	per := max(1, n.cfg.MaxTxnOps/2)
	var out []identity.Owner
	for len(ids) > 0 && len(out) < want {
		chunk := ids[:min(per, len(ids))]
		ids = ids[len(chunk):]
		ops := make([]clientv3.Op, 0, 2*len(chunk))
		for _, id := range chunk {
			ops = append(ops, clientv3.OpGet(n.idmap.Keys().Mapping(id)),
				clientv3.OpGet(n.keys.Entries(from.Name, id), clientv3.WithPrefix(), clientv3.WithCountOnly()))
		}
		cctx, cancel := n.etcdCtx(ctx)
		resp, err := n.writer.Read(cctx, ops...)
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
func (n *Node) commitRequested(ctx context.Context, req placement.Request, rev int64, moves []placement.Move) ([]madeMove, int64, error) {
	key := n.keys.RebalanceRequest(n.cfg.Name)
	leaderKey := n.keys.Leader()
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
				cmps = append(cmps, writepath.At(n.keys.Node(m.To.Name), regRev[m.To.Name]))
			}
		}
		resp, err := n.cluster.CommitMovesTxn(ctx, part, cmps,
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
	batch := n.cluster.MovesPerTxn()
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

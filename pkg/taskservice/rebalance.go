package taskservice

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/pkg/handoff"
	"github.com/taskd/taskd/pkg/identity"
)

// This file is the placement leader's rebalancing (contract §3.1): a node
// that joins (or comes back empty after its identities went to the others)
// gets its share, gradually. Every Config.RebalanceInterval the leader
// counts the identities of each RUNNING node and, while the most and the
// least loaded differ by more than the tolerance, plans moves from the one
// to the other.
//
// Guarantees:
//   - At most Config.RebalanceRate identities move per round, one round per
//     interval: a cluster scaled out settles over several rounds, never in
//     one burst.
//   - Only RUNNING nodes give or take identities. Each move is one Txn
//     fenced on the identity's epoch, on the leadership, and on the target's
//     registration as it was read (same lease, same revision: still
//     RUNNING, same incarnation).
//   - Every move is a planned move (commitMoves, as MoveIdentity and
//     draining): the old owner's runs in flight go on and their results
//     reach the new owner, which waits for them (up to DrainTimeout)
//     instead of running their fire times again.
//   - An identity is not moved while a move of it may still be in flight:
//     not if this leadership moved it within the cool-down
//     (DrainTimeout + RebalanceInterval), nor while a handoff entry for it
//     waits in its owner's area. Identities of the leader's own node with
//     a run in flight (or armed) stay where they are: that much the leader
//     knows without a read; another node's are taken in index order.
//   - A round reads the registrations with one count per node, and per
//     source only about twice as many index keys and mappings as it moves:
//     its cost follows the moves, not the number of identities.
//   - Moves stop once the spread is within the tolerance: tolerance percent
//     of the mean count, and never less than one identity, so that counts
//     one apart are never shuffled back and forth.

// rebalancer is the state of rebalancing for one leadership.
type rebalancer struct {
	// resting holds the identities this leadership moved, until when they
	// may move again.
	resting map[string]time.Time
	// cursor is, per source node, the index key after which the next
	// round looks for identities to move, so that ones skipped (busy,
	// resting) do not hold the same place every round.
	cursor map[string]string
}

func newRebalancer() *rebalancer {
	return &rebalancer{resting: map[string]time.Time{}, cursor: map[string]string{}}
}

// rebalanceTicks returns the channel of rebalancing rounds, nil (never
// ready) when rebalancing is off, and the function that stops it.
func (n *Node) rebalanceTicks() (<-chan time.Time, func()) {
	if n.cfg.DisableRebalance {
		return nil, func() {}
	}
	t := time.NewTicker(n.cfg.RebalanceInterval)
	return t.C, t.Stop
}

// rebalanceRound runs one round and reports it.
func (n *Node) rebalanceRound(ctx context.Context, l identity.Leadership, rb *rebalancer) {
	moved, err := n.rebalance(ctx, l, rb)
	if err != nil && ctx.Err() == nil {
		n.log.Warn("rebalancing round failed", "moved", moved, "error", err)
	}
	n.cfg.Observer.observeRebalance(moved)
}

// rebalance plans and carries out one round's moves; it returns how many
// identities moved.
func (n *Node) rebalance(ctx context.Context, l identity.Leadership, rb *rebalancer) (int, error) {
	cs, err := n.candidates(ctx)
	if err != nil {
		return 0, err
	}
	live := running(cs, "")
	plan := planRebalance(live, n.cfg.RebalanceRate, n.cfg.RebalanceTolerance)
	if len(plan) == 0 {
		return 0, nil
	}
	now := time.Now()
	for id, until := range rb.resting {
		if now.After(until) {
			delete(rb.resting, id)
		}
	}
	rest := now.Add(n.cfg.DrainTimeout + n.cfg.RebalanceInterval)
	before := spreadOf(live)
	total := 0
	for _, p := range plan {
		owners, err := n.rebalanceChoice(ctx, p.from, len(p.to), rb)
		if err != nil {
			return total, err
		}
		moves := make([]move, len(owners))
		for i, o := range owners {
			moves[i] = move{from: o, to: p.to[i]}
		}
		done, err := n.commitRebalance(ctx, l, moves)
		for _, m := range done {
			rb.resting[m.from.Identity] = rest
			if m.from.Node == n.cfg.Name {
				n.identityLeft(m.from.Identity, m.rev) // at once, not at the watch's pace
			}
		}
		total += len(done)
		if err != nil {
			return total, err
		}
	}
	if total > 0 {
		n.log.Info("rebalanced identities", "moved", total, "spread_before", before,
			"nodes", len(live), "rate", n.cfg.RebalanceRate)
	}
	return total, nil
}

// spreadOf is the difference between the most and the least loaded node.
func spreadOf(cs []*candidate) int64 {
	if len(cs) == 0 {
		return 0
	}
	lo, hi := cs[0].load, cs[0].load
	for _, c := range cs[1:] {
		lo, hi = min(lo, c.load), max(hi, c.load)
	}
	return hi - lo
}

// rebalanceSlack is the spread of identity counts that is tolerated:
// tolerance percent of the mean, and at least one.
func rebalanceSlack(total int64, nodes, tolerance int) int64 {
	if nodes == 0 {
		return 1
	}
	return max(total*int64(tolerance)/(100*int64(nodes)), 1)
}

// rebalanceMoves are the moves planned from one node: one target per
// identity to move.
type rebalanceMoves struct {
	from *candidate
	to   []*candidate
}

// planRebalance plans up to rate moves, each from the most loaded of live
// to the least loaded (ties broken by name), counting each as it is
// planned, until the spread is within the tolerance. live's loads are not
// changed.
func planRebalance(live []*candidate, rate, tolerance int) []rebalanceMoves {
	if len(live) < 2 {
		return nil
	}
	load := make([]int64, len(live))
	var total int64
	for i, c := range live {
		load[i] = c.load
		total += c.load
	}
	slack := rebalanceSlack(total, len(live), tolerance)
	var plan []rebalanceMoves
	at := map[int]int{} // live index → plan index
	for budget := rate; budget > 0; budget-- {
		hi, lo := 0, 0
		for i, c := range live {
			if load[i] > load[hi] || (load[i] == load[hi] && c.name < live[hi].name) {
				hi = i
			}
			if load[i] < load[lo] || (load[i] == load[lo] && c.name < live[lo].name) {
				lo = i
			}
		}
		if load[hi]-load[lo] <= slack {
			break
		}
		k, ok := at[hi]
		if !ok {
			k = len(plan)
			at[hi] = k
			plan = append(plan, rebalanceMoves{from: live[hi]})
		}
		plan[k].to = append(plan[k].to, live[lo])
		load[hi]--
		load[lo]++
	}
	return plan
}

// rebalanceChoice picks up to want identities of from to move: in from's
// ownership index after the node's cursor, mapped to from's current
// incarnation, not resting, with no handoff entry waiting at from and,
// when from is this node, with no run in flight here.
func (n *Node) rebalanceChoice(ctx context.Context, from *candidate, want int, rb *rebalancer) ([]identity.Owner, error) {
	prefix := n.idmap.Keys().OwnedPrefix(from.name)
	end := clientv3.GetPrefixRangeEnd(prefix)
	start := rb.cursor[from.name]
	if start == "" || !strings.HasPrefix(start, prefix) {
		start = prefix
	}
	limit := int64(2*want + 8)
	var ids []string
	seen := map[string]bool{} // a small index is read twice when the cursor wraps
	for pass := 0; pass < 2 && len(ids) < int(limit); pass++ {
		cctx, cancel := n.etcdCtx(ctx)
		resp, err := n.cli.Get(cctx, start, clientv3.WithRange(end), clientv3.WithKeysOnly(),
			clientv3.WithLimit(limit-int64(len(ids))))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list identities of %s: %w", from.name, err)
		}
		for _, kv := range resp.Kvs {
			rb.cursor[from.name] = string(kv.Key) + "\x00"
			id, err := identity.Decode(string(kv.Key[len(prefix):]))
			if err != nil || seen[id] || n.busyHere(from, id) {
				continue
			}
			seen[id] = true
			if _, resting := rb.resting[id]; !resting {
				ids = append(ids, id)
			}
		}
		if resp.More || start == prefix {
			break
		}
		start = prefix // wrap around once
		delete(rb.cursor, from.name)
	}
	return n.movableOwners(ctx, from, ids, want)
}

// busyHere reports whether id, of from, is this node's with a run in
// flight (or armed) here.
func (n *Node) busyHere(from *candidate, id string) bool {
	if from.name != n.cfg.Name {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.identityFlightsLocked(id) > 0
}

// movableOwners reads the mappings of ids, with a count of the handoff
// entries waiting for each at from, and returns up to want of them mapped
// to from's incarnation with none waiting.
func (n *Node) movableOwners(ctx context.Context, from *candidate, ids []string, want int) ([]identity.Owner, error) {
	area := handoff.NewKeys(n.cfg.Prefix).Area(from.name)
	per := max(1, n.cfg.MaxTxnOps/2)
	var out []identity.Owner
	for len(ids) > 0 && len(out) < want {
		chunk := ids[:min(per, len(ids))]
		ids = ids[len(chunk):]
		ops := make([]clientv3.Op, 0, 2*len(chunk))
		for _, id := range chunk {
			ops = append(ops, clientv3.OpGet(n.idmap.Keys().Mapping(id)),
				clientv3.OpGet(area+identity.Encode(id)+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()))
		}
		cctx, cancel := n.etcdCtx(ctx)
		resp, err := n.cli.Txn(cctx).Then(ops...).Commit()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("read mappings of %s: %w", from.name, err)
		}
		for i, id := range chunk {
			owner, err := identity.OwnerFromResponse(id, (*clientv3.GetResponse)(resp.Responses[2*i].GetResponseRange()))
			pending := resp.Responses[2*i+1].GetResponseRange().GetCount()
			if err != nil || !owner.Mapped || owner.Node != from.name || owner.Incarnation != from.inc || pending > 0 {
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
	move
	rev int64
}

// commitRebalance carries out moves in batched Txns, each fenced on the
// leadership and on every target's registration as read; a batch that
// fails a compare is tried one move at a time, and a move that fails alone
// is left for a later round. It returns the moves made.
func (n *Node) commitRebalance(ctx context.Context, l identity.Leadership, moves []move) ([]madeMove, error) {
	var done []madeMove
	batch := n.movesPerTxn()
	for len(moves) > 0 {
		k := min(batch, len(moves))
		part := moves[:k]
		moves = moves[k:]
		rev, ok, err := n.commitRebalanceBatch(ctx, l, part)
		if err != nil {
			return done, err
		}
		if ok {
			for _, m := range part {
				done = append(done, madeMove{m, rev})
			}
			continue
		}
		for _, m := range part {
			rev, ok, err := n.commitRebalanceBatch(ctx, l, []move{m})
			if err != nil {
				return done, err
			}
			if ok {
				done = append(done, madeMove{m, rev})
			}
		}
	}
	return done, nil
}

func (n *Node) commitRebalanceBatch(ctx context.Context, l identity.Leadership, moves []move) (int64, bool, error) {
	extra := []clientv3.Cmp{l.Fence()}
	seen := map[string]bool{}
	for _, m := range moves {
		if !seen[m.to.name] {
			seen[m.to.name] = true
			extra = append(extra, clientv3.Compare(clientv3.ModRevision(n.nodesPrefix+m.to.name), "=", m.to.rev))
		}
	}
	return n.commitMoves(ctx, moves, extra...)
}

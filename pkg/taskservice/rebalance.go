package taskservice

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/pkg/identity"
)

// This file is the placement leader's side of rebalancing (contract §3.1):
// a node that joins (or comes back empty after its identities went to the
// others) gets its share, gradually. Every Config.RebalanceInterval the
// leader counts the identities of each RUNNING node and, while the most and
// the least loaded differ by more than the tolerance, plans moves from the
// one to the other. It plans counts only: which identities move is the
// source node's choice (rebalancerequest.go), since only the owner knows
// which of its identities have a run in flight.
//
// Guarantees:
//   - At most Config.RebalanceRate identities are asked for per round, one
//     round per interval, and a source holds at most one request (a new
//     one replaces one not served): a cluster scaled out settles over
//     several rounds, never in one burst.
//   - Only RUNNING nodes give or take identities. A request is written
//     only while this node leads, the source's registration is as counted,
//     and the source's previous request is as it was before the counts
//     were read (so counts that a request being served has made stale
//     never plan a second request on top of it). It names each target's
//     registration as read, which the source's moves compare.
//   - The owner never moves an identity with a run in flight, armed or due
//     within the look-ahead, nor one whose handoff is still waiting, nor
//     one it moved away and got back within the cool-down
//     (DrainTimeout + RebalanceInterval): a rebalancing move never makes a
//     second execution of a run, whatever the run's length.
//   - A round reads the registrations with one count per node and the keys
//     of the control area: its cost follows the nodes, not the number of
//     identities.
//   - Moves stop once the spread is within the tolerance: tolerance percent
//     of the mean count, and never less than one identity, so that counts
//     one apart are never shuffled back and forth.

// rebalanceTicks returns the channel of rebalancing rounds, nil (never
// ready) when rebalancing is off, and the function that stops it.
func (n *Node) rebalanceTicks() (<-chan time.Time, func()) {
	if n.cfg.DisableRebalance {
		return nil, func() {}
	}
	t := time.NewTicker(n.cfg.RebalanceInterval)
	return t.C, t.Stop
}

// rebalanceRound runs one round and logs a failure.
func (n *Node) rebalanceRound(ctx context.Context, l identity.Leadership) {
	if err := n.rebalance(ctx, l); err != nil && ctx.Err() == nil {
		n.log.Warn("rebalancing round failed", "error", err)
	}
}

// rebalance plans one round's moves and writes them as requests into the
// sources' control areas.
func (n *Node) rebalance(ctx context.Context, l identity.Leadership) error {
	// The requests standing before the counts are read: a request written
	// over one of them only if it did not change meanwhile (moves of it
	// served after this read would make the counts stale).
	standing, err := n.standingRequests(ctx)
	if err != nil {
		return err
	}
	cs, err := n.candidates(ctx)
	if err != nil {
		return err
	}
	live := running(cs, "")
	plan := planRebalance(live, n.cfg.RebalanceRate, n.cfg.RebalanceTolerance)
	asked := 0
	for _, p := range plan {
		req := newRebalanceRequest(p, l.Rev, n.cfg.Name)
		ok, err := n.putRebalanceRequest(ctx, l, p.from, req, standing[p.from.name])
		if err != nil {
			return err
		}
		if ok {
			asked += req.total()
		}
	}
	if asked > 0 {
		n.log.Debug("asked for rebalancing moves", "identities", asked, "sources", len(plan),
			"spread", spreadOf(live), "nodes", len(live), "rate", n.cfg.RebalanceRate)
	}
	return nil
}

// standingRequests reads the mod revisions of the rebalancing requests in
// the control areas, by node.
func (n *Node) standingRequests(ctx context.Context) (map[string]int64, error) {
	prefix := n.keys.Controls()
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	resp, err := n.cli.Get(cctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("list the control areas: %w", err)
	}
	out := map[string]int64{}
	for _, kv := range resp.Kvs {
		node, ok := n.keys.SplitRebalanceRequest(string(kv.Key))
		if ok {
			out[node] = kv.ModRevision
		}
	}
	return out, nil
}

// putRebalanceRequest writes req into from's control area, under from's
// lease (a request dies with its node), if this node still leads, from's
// registration is as read and from's request key still stands at was (0:
// absent). ok is false if a compare failed.
func (n *Node) putRebalanceRequest(ctx context.Context, l identity.Leadership, from *candidate, req rebalanceRequest, was int64) (bool, error) {
	key := n.keys.RebalanceRequest(from.name)
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	resp, err := n.writer.Commit(cctx, n.shapes.RebalanceRequest(l, key, from.name, from.rev, was, from.lease, req.encode()))
	if err != nil {
		return false, fmt.Errorf("request rebalancing moves from %s: %w", from.name, err)
	}
	return resp.Succeeded, nil
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

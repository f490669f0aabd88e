package placement

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
// source node's choice (internal/ownership's rebalance.go), since only
// the owner knows which of its identities have a run in flight.
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
func (ld *Leader) rebalanceTicks() (<-chan time.Time, func()) {
	if ld.cfg.DisableRebalance {
		return nil, func() {}
	}
	t := time.NewTicker(ld.cfg.RebalanceInterval)
	return t.C, t.Stop
}

// rebalanceRound runs one round and logs a failure.
func (ld *Leader) rebalanceRound(ctx context.Context, l identity.Leadership) {
	if err := ld.rebalance(ctx, l); err != nil && ctx.Err() == nil {
		ld.log.Warn("rebalancing round failed", "error", err)
	}
}

// rebalance plans one round's moves and writes them as requests into the
// sources' control areas.
func (ld *Leader) rebalance(ctx context.Context, l identity.Leadership) error {
	// The requests standing before the counts are read: a request written
	// over one of them only if it did not change meanwhile (moves of it
	// served after this read would make the counts stale).
	standing, err := ld.standingRequests(ctx)
	if err != nil {
		return err
	}
	cs, err := ld.cl.Candidates(ctx)
	if err != nil {
		return err
	}
	live := Running(cs, "")
	plan := planRebalance(live, ld.cfg.RebalanceRate, ld.cfg.RebalanceTolerance)
	asked := 0
	for _, p := range plan {
		req := newRequest(p, l.Rev, ld.cfg.Name)
		ok, err := ld.putRebalanceRequest(ctx, l, p.from, req, standing[p.from.Name])
		if err != nil {
			return err
		}
		if ok {
			asked += req.Total()
		}
	}
	if asked > 0 {
		ld.log.Debug("asked for rebalancing moves", "identities", asked, "sources", len(plan),
			"spread", spreadOf(live), "nodes", len(live), "rate", ld.cfg.RebalanceRate)
	}
	return nil
}

// standingRequests reads the mod revisions of the rebalancing requests in
// the control areas, by node.
func (ld *Leader) standingRequests(ctx context.Context) (map[string]int64, error) {
	prefix := ld.cl.Keys.Controls()
	cctx, cancel := ld.etcdCtx(ctx)
	defer cancel()
	resp, err := ld.cl.Client.Get(cctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("list the control areas: %w", err)
	}
	out := map[string]int64{}
	for _, kv := range resp.Kvs {
		node, ok := ld.cl.Keys.SplitRebalanceRequest(string(kv.Key))
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
func (ld *Leader) putRebalanceRequest(ctx context.Context, l identity.Leadership, from *Candidate, req Request, was int64) (bool, error) {
	key := ld.cl.Keys.RebalanceRequest(from.Name)
	cctx, cancel := ld.etcdCtx(ctx)
	defer cancel()
	resp, err := ld.cl.Writer.Commit(cctx, ld.cl.Shapes.RebalanceRequest(l, key, from.Name, from.Rev, was, from.Lease, req.Encode()))
	if err != nil {
		return false, fmt.Errorf("request rebalancing moves from %s: %w", from.Name, err)
	}
	return resp.Succeeded, nil
}

// spreadOf is the difference between the most and the least loaded node.
func spreadOf(cs []*Candidate) int64 {
	if len(cs) == 0 {
		return 0
	}
	lo, hi := cs[0].Load, cs[0].Load
	for _, c := range cs[1:] {
		lo, hi = min(lo, c.Load), max(hi, c.Load)
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
	from *Candidate
	to   []*Candidate
}

// planRebalance plans up to rate moves, each from the most loaded of live
// to the least loaded (ties broken by name), counting each as it is
// planned, until the spread is within the tolerance. live's loads are not
// changed.
func planRebalance(live []*Candidate, rate, tolerance int) []rebalanceMoves {
	if len(live) < 2 {
		return nil
	}
	load := make([]int64, len(live))
	var total int64
	for i, c := range live {
		load[i] = c.Load
		total += c.Load
	}
	slack := rebalanceSlack(total, len(live), tolerance)
	var plan []rebalanceMoves
	at := map[int]int{} // live index → plan index
	for budget := rate; budget > 0; budget-- {
		hi, lo := 0, 0
		for i, c := range live {
			if load[i] > load[hi] || (load[i] == load[hi] && c.Name < live[hi].Name) {
				hi = i
			}
			if load[i] < load[lo] || (load[i] == load[lo] && c.Name < live[lo].Name) {
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

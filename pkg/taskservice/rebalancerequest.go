package taskservice

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is the source node's side of rebalancing (contract §3.1): the
// placement leader plans how many identities a node gives to which targets
// (rebalance.go) and writes that as a request into the node's control area;
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
//   - The moves are planned moves (commitMoves), batched, at most the
//     request's count, itself bounded by maxRequestMoves.

// maxRequestMoves and maxRequestTargets bound a request as parsed: the
// most identities (the largest --rebalance-rate) and distinct targets.
const (
	maxRequestMoves   = 10000
	maxRequestTargets = 1000
	maxRequestBytes   = 128 << 10
)

// rebalanceRequest asks the node of incarnation source to move count
// identities to each target, on behalf of the leadership whose leader key
// was created at leaderRev.
type rebalanceRequest struct {
	source    string
	leaderRev int64
	leader    string // the leader's name, for the log
	targets   []requestTarget
	// claimed marks a request the source has begun to serve (no targets).
	claimed bool
}

// requestTarget is a target as the leader read its registration.
type requestTarget struct {
	name, inc  string
	lease, rev int64
	count      int
}

// newRebalanceRequest is the request of one source's planned moves.
func newRebalanceRequest(p rebalanceMoves, leaderRev int64, leader string) rebalanceRequest {
	req := rebalanceRequest{source: p.from.inc, leaderRev: leaderRev, leader: leader}
	at := map[string]int{}
	for _, c := range p.to {
		i, ok := at[c.name]
		if !ok {
			if len(req.targets) == maxRequestTargets {
				continue
			}
			i = len(req.targets)
			at[c.name] = i
			req.targets = append(req.targets, requestTarget{name: c.name, inc: c.inc, lease: c.lease, rev: c.rev})
		}
		req.targets[i].count++
	}
	return req
}

// total is the number of identities asked for.
func (r rebalanceRequest) total() int {
	t := 0
	for _, tg := range r.targets {
		t += tg.count
	}
	return t
}

// encode writes the request as lines of text:
//
//	rebalance v1
//	source <incarnation>
//	leader <leader key's create revision> <name>
//	to <name> <incarnation> <lease> <registration revision> <count>  (per target)
//	claimed  (instead of the targets, once the source began serving)
func (r rebalanceRequest) encode() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rebalance v1\nsource %s\nleader %d %s\n", r.source, r.leaderRev, r.leader)
	if r.claimed {
		b.WriteString("claimed\n")
		return b.String()
	}
	for _, t := range r.targets {
		fmt.Fprintf(&b, "to %s %s %d %d %d\n", t.name, t.inc, t.lease, t.rev, t.count)
	}
	return b.String()
}

// parseRebalanceRequest reads an encoded request, strictly: every line as
// encode writes it, names valid, numbers positive, within the bounds.
func parseRebalanceRequest(s string) (rebalanceRequest, error) {
	var r rebalanceRequest
	if len(s) > maxRequestBytes {
		return r, fmt.Errorf("request of %d bytes, the limit is %d", len(s), maxRequestBytes)
	}
	lines := strings.Split(s, "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" {
		return r, errors.New("request truncated")
	}
	lines = lines[:len(lines)-1]
	if lines[0] != "rebalance v1" {
		return r, fmt.Errorf("unknown request %q", lines[0])
	}
	src := strings.Split(lines[1], " ")
	if len(src) != 2 || src[0] != "source" || !validIncarnation(src[1]) {
		return r, fmt.Errorf("bad source line %q", lines[1])
	}
	r.source = src[1]
	ld := strings.Split(lines[2], " ")
	if len(ld) != 3 || ld[0] != "leader" || ValidateNodeName("leader", ld[2]) != nil {
		return r, fmt.Errorf("bad leader line %q", lines[2])
	}
	var err error
	if r.leaderRev, err = positive(ld[1]); err != nil {
		return r, fmt.Errorf("bad leader line %q: %w", lines[2], err)
	}
	r.leader = ld[2]
	if len(lines) == 4 && lines[3] == "claimed" {
		r.claimed = true
		return r, nil
	}
	if len(lines) == 3 {
		return r, errors.New("a request with no target")
	}
	if len(lines)-3 > maxRequestTargets {
		return r, fmt.Errorf("%d targets, the limit is %d", len(lines)-3, maxRequestTargets)
	}
	seen := map[string]bool{}
	total := int64(0)
	for _, line := range lines[3:] {
		f := strings.Split(line, " ")
		if len(f) != 6 || f[0] != "to" || ValidateNodeName("target", f[1]) != nil || !validIncarnation(f[2]) || seen[f[1]] {
			return r, fmt.Errorf("bad target line %q", line)
		}
		seen[f[1]] = true
		t := requestTarget{name: f[1], inc: f[2]}
		var count int64
		if t.lease, err = positive(f[3]); err == nil {
			if t.rev, err = positive(f[4]); err == nil {
				count, err = positive(f[5])
			}
		}
		if err != nil {
			return r, fmt.Errorf("bad target line %q: %w", line, err)
		}
		if total += count; total > maxRequestMoves {
			return r, fmt.Errorf("more than %d moves asked for", maxRequestMoves)
		}
		t.count = int(count)
		r.targets = append(r.targets, t)
	}
	return r, nil
}

// positive parses a decimal number greater than zero.
func positive(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || strconv.FormatInt(v, 10) != s {
		return 0, fmt.Errorf("%q is not a positive number", s)
	}
	return v, nil
}

// validIncarnation reports whether s can be an incarnation (lower-case hex).
func validIncarnation(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// rebalanceRequested acts on the request found in this node's request key
// at rev (this node's follow.Control hands it over, from its control area).
func (n *Node) rebalanceRequested(ctx context.Context, value string, rev int64) {
	req, err := parseRebalanceRequest(value)
	switch {
	case err != nil:
		n.log.Warn("deleting a rebalancing request that does not parse", "error", err)
	case req.source != n.incarnation:
		n.log.Debug("deleting a rebalancing request for another incarnation", "incarnation", req.source)
	case req.claimed:
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
			n.log.Info("rebalanced identities", "moved", moved, "asked", req.total(), "leader", req.leader)
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
func (n *Node) serveRebalance(ctx context.Context, req rebalanceRequest, rev int64) (int, int64, error) {
	now := time.Now()
	for id, until := range n.rebalancedAway {
		if now.After(until) {
			delete(n.rebalancedAway, id)
		}
	}
	want := req.total()
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
	owners, err := n.movableOwners(ctx, &candidate{name: n.cfg.Name, inc: n.incarnation}, ids, want)
	if err != nil {
		return 0, rev, err
	}
	var moves []move
	for _, tg := range req.targets {
		to := &candidate{name: tg.name, inc: tg.inc, lease: tg.lease, rev: tg.rev}
		for k := 0; k < tg.count && len(moves) < len(owners); k++ {
			moves = append(moves, move{from: owners[len(moves)], to: to})
		}
	}
	done, cur, err := n.commitRequested(ctx, req, rev, moves)
	rest := now.Add(n.cfg.DrainTimeout + n.cfg.RebalanceInterval)
	for _, m := range done {
		n.rebalancedAway[m.from.Identity] = rest
		n.identityLeft(m.from.Identity, m.rev) // at once, not at the watch's pace
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
func (n *Node) movableOwners(ctx context.Context, from *candidate, ids []string, want int) ([]identity.Owner, error) {
	per := max(1, n.cfg.MaxTxnOps/2)
	var out []identity.Owner
	for len(ids) > 0 && len(out) < want {
		chunk := ids[:min(per, len(ids))]
		ids = ids[len(chunk):]
		ops := make([]clientv3.Op, 0, 2*len(chunk))
		for _, id := range chunk {
			ops = append(ops, clientv3.OpGet(n.idmap.Keys().Mapping(id)),
				clientv3.OpGet(n.keys.Entries(from.name, id), clientv3.WithPrefix(), clientv3.WithCountOnly()))
		}
		cctx, cancel := n.etcdCtx(ctx)
		resp, err := n.writer.Read(cctx, ops...)
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

// errRequestGone reports that the request being served was replaced, or
// that the leadership that wrote it ended.
var errRequestGone = errors.New("the rebalancing request was replaced, or its leadership ended")

// commitRequested carries out the moves of req, whose key stands at rev,
// in batched Txns; a batch that fails a compare while the request still
// stands is tried one move at a time, and a move that fails alone is left
// for a later request. It returns the moves made and the revision the
// request key stands at after them.
func (n *Node) commitRequested(ctx context.Context, req rebalanceRequest, rev int64, moves []move) ([]madeMove, int64, error) {
	key := n.keys.RebalanceRequest(n.cfg.Name)
	leaderKey := n.keys.Leader()
	claim := rebalanceRequest{source: req.source, leaderRev: req.leaderRev, leader: req.leader, claimed: true}.encode()
	regRev := map[string]int64{}
	for _, tg := range req.targets {
		regRev[tg.name] = tg.rev
	}
	var done []madeMove
	try := func(part []move) (ok bool, err error) {
		cmps := []clientv3.Cmp{writepath.At(key, rev), writepath.Created(leaderKey, req.leaderRev)}
		seen := map[string]bool{}
		for _, m := range part {
			if !seen[m.to.name] {
				seen[m.to.name] = true
				cmps = append(cmps, writepath.At(n.keys.Node(m.to.name), regRev[m.to.name]))
			}
		}
		resp, err := n.commitMovesTxn(ctx, part, cmps,
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
		if len(k) != 1 || k[0].ModRevision != rev || len(l) != 1 || l[0].CreateRevision != req.leaderRev {
			return false, errRequestGone
		}
		return false, nil
	}
	batch := n.movesPerTxn()
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
			if _, err := try([]move{m}); err != nil {
				return done, rev, err
			}
		}
	}
	return done, rev, nil
}

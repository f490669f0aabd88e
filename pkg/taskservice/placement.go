package taskservice

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/etcdwatch"
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file moves identities between nodes (contract §3.1-3.2): explicit
// moves, the placement leader's reassignment of a dead node's identities,
// (drain.go) draining and (rebalance.go, rebalancerequest.go) rebalancing.
// Every move is one Txn: the identity's epoch compare, the new mapping (a
// new epoch), the ownership index, and a handoff entry in the new owner's
// area.

// candidate is a node that can take identities.
type candidate struct {
	name, inc string
	lease     int64 // the registration's lease: the Txn compares it
	rev       int64 // the registration's revision (it changes with the state)
	state     taskdv1.NodeState
	load      int64
}

// candidates reads the registered nodes with their loads.
func (n *Node) candidates(ctx context.Context) ([]*candidate, error) {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	resp, err := n.cli.Get(cctx, n.keys.Nodes(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var out []*candidate
	for _, kv := range resp.Kvs {
		var rec storev1.NodeRecord
		if err := proto.Unmarshal(kv.Value, &rec); err != nil {
			continue
		}
		load, err := n.idmap.CountOwned(cctx, rec.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, &candidate{name: rec.Name, inc: rec.Incarnation, lease: kv.Lease, rev: kv.ModRevision,
			state: rec.State, load: load})
	}
	return out, nil
}

// running keeps the RUNNING candidates other than exclude.
func running(cs []*candidate, exclude string) []*candidate {
	var out []*candidate
	for _, c := range cs {
		if c.state == taskdv1.NodeState_NODE_STATE_RUNNING && c.name != exclude {
			out = append(out, c)
		}
	}
	return out
}

// leastLoaded picks the candidate with the fewest identities and counts one
// more for it.
func leastLoaded(cs []*candidate) *candidate {
	best := cs[0]
	for _, c := range cs[1:] {
		if c.load < best.load || (c.load == best.load && c.name < best.name) {
			best = c
		}
	}
	best.load++
	return best
}

// move is one identity going from its owner to a node.
type move struct {
	from identity.Owner
	to   *candidate
}

// commitMoves carries out moves in one Txn, with extra compares; ok is
// false (nothing written) if any compare failed.
func (n *Node) commitMoves(ctx context.Context, moves []move, extra ...clientv3.Cmp) (rev int64, ok bool, err error) {
	resp, err := n.commitMovesTxn(ctx, moves, extra, nil, nil)
	if err != nil {
		return 0, false, err
	}
	return resp.Header.Revision, resp.Succeeded, nil
}

// commitMovesTxn is commitMoves with operations of the caller's own: then
// written with the moves, orElse read when a compare failed.
func (n *Node) commitMovesTxn(ctx context.Context, moves []move, extra []clientv3.Cmp, then, orElse []clientv3.Op) (*clientv3.TxnResponse, error) {
	ms := make([]writepath.Move, len(moves))
	for i, m := range moves {
		ms[i] = writepath.Move{Identity: m.from.Identity, Mapped: m.from.Mapped, Epoch: m.from.Epoch, FromNode: m.from.Node,
			To: m.to.name, ToInc: m.to.inc, ToLease: m.to.lease}
	}
	txn, err := n.shapes.Moves(ms, extra, then, orElse)
	if err != nil {
		return nil, err
	}
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	resp, err := n.writer.Commit(cctx, txn)
	if err != nil {
		return nil, fmt.Errorf("move identities: %w", err)
	}
	return resp, nil
}

// movesPerTxn is how many moves fit in one Txn (4 operations each).
func (n *Node) movesPerTxn() int { return writepath.MovesPerTxn(n.cfg.MaxTxnOps) }

// MoveIdentity moves id to the RUNNING node to (contract §3.1): one Txn changes
// the mapping (a new epoch) and writes the handoff entry that the new owner
// picks up; the old owner drops the identity when it sees the change.
func (n *Node) MoveIdentity(ctx context.Context, id, to string) (*taskdv1.Identity, error) {
	for attempt := 0; attempt < 5; attempt++ {
		cs, err := n.candidates(ctx)
		if err != nil {
			return nil, err
		}
		var target *candidate
		for _, c := range cs {
			if c.name == to {
				target = c
			}
		}
		if target == nil {
			return nil, fmt.Errorf("node %q is not registered: %w", to, ErrFailedPrecondition)
		}
		if target.state != taskdv1.NodeState_NODE_STATE_RUNNING {
			return nil, fmt.Errorf("node %q is %s, not RUNNING: %w", to,
				strings.TrimPrefix(target.state.String(), "NODE_STATE_"), ErrFailedPrecondition)
		}
		cctx, cancel := n.etcdCtx(ctx)
		owner, err := n.idmap.Get(cctx, id)
		cancel()
		if err != nil {
			return nil, err
		}
		if owner.Mapped && owner.Node == target.name && owner.Incarnation == target.inc {
			return n.GetIdentity(ctx, id)
		}
		_, ok, err := n.commitMoves(ctx, []move{{from: owner, to: target}})
		if err != nil {
			return nil, err
		}
		if ok {
			n.log.Info("identity moved", "identity", id, "from", owner.Node, "to", to)
			return n.GetIdentity(ctx, id)
		}
	}
	return nil, fmt.Errorf("move %q: the mapping or the target kept changing: %w", id, ErrConflict)
}

// dropDeadArea deletes the handoff area of a dead node whose identities
// have all been moved: its entries name tasks whose identities now belong
// to other nodes, which were handed them in the move itself. Fenced on the
// leadership and on the node still being absent.
func (n *Node) dropDeadArea(ctx context.Context, l identity.Leadership, dead string, absent clientv3.Cmp) error {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	if _, err := n.writer.Commit(cctx, n.shapes.DropArea(l, dead, absent)); err != nil {
		return fmt.Errorf("drop the handoff area of dead node %s: %w", dead, err)
	}
	return nil
}

// placementLoop campaigns to be the placement leader and, while leader,
// reassigns the identities of dead nodes (contract §3.1, §5.4's counterpart
// for a node that does not come back) and rebalances the RUNNING nodes
// (rebalance.go).
func (n *Node) placementLoop(ctx context.Context) {
	for ctx.Err() == nil {
		lease := n.member.Lease()
		key := n.keys.Leader()
		claim := n.shapes.Claim(key, n.cfg.Name+" "+n.incarnation, lease)
		l, err := identity.Campaign(ctx, n.cli, func(ctx context.Context) (*clientv3.TxnResponse, error) { return n.writer.Commit(ctx, claim) },
			key, lease, n.cfg.EtcdTimeout)
		if err != nil {
			// Most likely the lease expired and the node is registering
			// again: campaign with its new lease after a breath.
			n.log.Debug("placement campaign ended", "error", err)
			select {
			case <-time.After(n.cfg.HandoffPeriod):
			case <-ctx.Done():
			}
			continue
		}
		n.log.Info("placement leader")
		n.lead(ctx, l)
		n.log.Info("placement leadership ended")
	}
}

// lead does the leader's work until the holding l ends.
func (n *Node) lead(ctx context.Context, l identity.Leadership) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		identity.Lost(ctx, n.cli, l, n.cfg.EtcdTimeout)
		cancel()
	}()
	sweep := make(chan struct{}, 1)
	go func() {
		defer wg.Done()
		n.watchNodeDeaths(ctx, sweep)
	}()
	ticker := time.NewTicker(n.cfg.LeaseTTL)
	rebalance, stopRebalance := n.rebalanceTicks()
	for skipSweep := false; ctx.Err() == nil; {
		if !skipSweep {
			if err := n.sweep(ctx, l); err != nil && ctx.Err() == nil {
				n.log.Warn("placement sweep failed", "error", err)
			}
		}
		skipSweep = false
		select {
		case <-sweep:
		case <-ticker.C:
		case <-rebalance:
			// In turn with the sweeps: a dead node's identities are
			// reassigned before the spread is looked at.
			n.rebalanceRound(ctx, l)
			skipSweep = true
		case <-ctx.Done():
		}
	}
	stopRebalance()
	ticker.Stop()
	cancel()
	wg.Wait()
}

// watchNodeDeaths signals sweep whenever a node's registration goes away,
// and after every list of the registrations: the first, which closes the
// gap between the leader's first sweep and the watch, and each one after a
// break of the watch, when deaths may have gone unseen.
func (n *Node) watchNodeDeaths(ctx context.Context, sweep chan<- struct{}) {
	signal := func() {
		select {
		case sweep <- struct{}{}:
		default:
		}
	}
	n.watch.Follow(ctx, "registrations", etcdwatch.Follower{
		Key:     n.keys.Nodes(),
		Options: []clientv3.OpOption{clientv3.WithPrefix()},
		// The sweep itself reads the registrations; the list only fixes
		// the revision the watch starts after.
		List: func(ctx context.Context) (int64, error) {
			cctx, cancel := n.etcdCtx(ctx)
			defer cancel()
			resp, err := n.cli.Get(cctx, n.keys.Nodes(), clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return 0, err
			}
			signal()
			return resp.Header.Revision, nil
		},
		Events: func(_ context.Context, evs []*clientv3.Event) {
			for _, ev := range evs {
				if ev.Type == clientv3.EventTypeDelete {
					signal()
				}
			}
		},
	})
}

// sweep finds nodes that own identities but are not registered, and
// reassigns their identities.
func (n *Node) sweep(ctx context.Context, l identity.Leadership) error {
	owners, err := n.ownerNames(ctx)
	if err != nil {
		return err
	}
	cs, err := n.candidates(ctx)
	if err != nil {
		return err
	}
	registered := map[string]bool{}
	for _, c := range cs {
		registered[c.name] = true
	}
	for _, o := range owners {
		if !registered[o] {
			if err := n.reassignDead(ctx, l, o); err != nil {
				return err
			}
		}
	}
	// Handoff areas of nodes that are gone and own nothing any more (a
	// task entry written for a node just before it died outlives it).
	areas, err := n.namesUnder(ctx, n.keys.Handoffs())
	if err != nil {
		return err
	}
	for _, a := range areas {
		if !registered[a] && !slices.Contains(owners, a) {
			absent := clientv3.Compare(clientv3.CreateRevision(n.keys.Node(a)), "=", 0)
			if err := n.dropDeadArea(ctx, l, a, absent); err != nil {
				return err
			}
		}
	}
	return n.purgeEvery(ctx, l)
}

// purgeEvery deletes the cancelled EVERY_NODE tasks whose retention is
// over, with their history and the nodes' progress (as DeleteTask does).
func (n *Node) purgeEvery(ctx context.Context, l identity.Leadership) error {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	resp, err := n.cli.Get(cctx, n.keys.AllEvery(), clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("list EVERY_NODE tasks: %w", err)
	}
	for _, kv := range resp.Kvs {
		rec, err := pending.Decode(kv.Value)
		if err != nil || rec.State != taskdv1.TaskState_TASK_STATE_CANCELED ||
			time.Since(rec.GetFinishedAt().AsTime()) < n.cfg.Retention {
			continue
		}
		ops, err := n.everyDeleteOps(ctx, rec)
		if err != nil {
			return err
		}
		if _, err := n.writer.Commit(cctx, n.shapes.PurgeEvery(l, string(kv.Key), kv.ModRevision, ops)); err != nil {
			return fmt.Errorf("purge EVERY_NODE task %s: %w", rec.Id, err)
		}
	}
	return nil
}

// ownerNames lists the nodes that have an ownership index.
func (n *Node) ownerNames(ctx context.Context) ([]string, error) {
	return n.namesUnder(ctx, n.keys.AllOwned())
}

// namesUnder lists the node names of the per-node areas under prefix
// (prefix<node>/...), one read per node: it jumps from one node's area to
// the next.
func (n *Node) namesUnder(ctx context.Context, prefix string) ([]string, error) {
	end := clientv3.GetPrefixRangeEnd(prefix)
	from := prefix
	var names []string
	for {
		cctx, cancel := n.etcdCtx(ctx)
		resp, err := n.cli.Get(cctx, from, clientv3.WithRange(end), clientv3.WithLimit(1), clientv3.WithKeysOnly())
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		if len(resp.Kvs) == 0 {
			return names, nil
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(string(resp.Kvs[0].Key), prefix), "/")
		names = append(names, name)
		from = clientv3.GetPrefixRangeEnd(prefix + name + "/")
	}
}

// reassignDead moves every identity of the dead node to live RUNNING nodes,
// spread by load, in batched Txns. Each Txn also holds only while this node
// is still the leader and the dead node is still unregistered (it may come
// back under its name and adopt them itself).
func (n *Node) reassignDead(ctx context.Context, l identity.Leadership, dead string) error {
	began, total := time.Now(), 0
	batch := n.movesPerTxn()
	absent := clientv3.Compare(clientv3.CreateRevision(n.keys.Node(dead)), "=", 0)
	var live []*candidate
	prefix := n.idmap.Keys().OwnedPrefix(dead)
	for ctx.Err() == nil {
		cctx, cancel := n.etcdCtx(ctx)
		resp, err := n.cli.Get(cctx, prefix, clientv3.WithPrefix(),
			clientv3.WithKeysOnly(), clientv3.WithLimit(int64(batch)))
		cancel()
		if err != nil {
			return fmt.Errorf("list identities of dead node %s: %w", dead, err)
		}
		if len(resp.Kvs) == 0 {
			if total > 0 {
				n.log.Info("reassigned the identities of a dead node", "dead", dead, "identities", total,
					"took", time.Since(began).String())
			}
			return n.dropDeadArea(ctx, l, dead, absent)
		}
		if live == nil {
			// Read once per round of successes: loads are then counted here.
			cs, err := n.candidates(ctx)
			if err != nil {
				return err
			}
			for _, c := range cs {
				if c.name == dead {
					return nil // it came back
				}
			}
			live = running(cs, dead)
			if len(live) == 0 {
				n.log.Warn("no RUNNING node to take the identities of a dead node", "dead", dead)
				return nil
			}
			sort.Slice(live, func(i, j int) bool { return live[i].name < live[j].name })
		}
		ids := make([]string, 0, len(resp.Kvs))
		gets := make([]clientv3.Op, 0, len(resp.Kvs))
		var junk []string
		for _, kv := range resp.Kvs {
			id, err := keyspace.Decode(string(kv.Key[len(prefix):]))
			if err != nil {
				// No identity encodes to this key: it can only be junk, and
				// left in place it would be listed first forever.
				n.log.Warn("deleting an index key that names no identity", "key", string(kv.Key))
				junk = append(junk, string(kv.Key))
				continue
			}
			ids = append(ids, id)
			gets = append(gets, clientv3.OpGet(n.idmap.Keys().Mapping(id)))
		}
		if len(junk) > 0 {
			cctx, cancel := n.etcdCtx(ctx)
			_, err := n.writer.Commit(cctx, n.shapes.LeaderDeletes(l, nil, junk...))
			cancel()
			if err != nil {
				return fmt.Errorf("delete junk index keys of %s: %w", dead, err)
			}
		}
		if len(gets) == 0 {
			continue
		}
		cctx, cancel = n.etcdCtx(ctx)
		read, err := n.writer.Read(cctx, gets...)
		cancel()
		if err != nil {
			return fmt.Errorf("read mappings of dead node %s: %w", dead, err)
		}
		var moves []move
		var staleKeys []string
		var staleCmps []clientv3.Cmp
		for i, id := range ids {
			owner, err := identity.OwnerFromResponse(id, (*clientv3.GetResponse)(read.Responses[i].GetResponseRange()))
			if err != nil {
				continue
			}
			if !owner.Mapped || owner.Node != dead {
				// The index entry outlived a move: drop it.
				staleCmps = append(staleCmps, n.shapes.Epoch(id, owner.Epoch))
				staleKeys = append(staleKeys, n.idmap.Keys().Owned(dead, id))
				continue
			}
			moves = append(moves, move{from: owner, to: leastLoaded(live)})
		}
		if len(staleKeys) > 0 {
			cctx, cancel = n.etcdCtx(ctx)
			_, err := n.writer.Commit(cctx, n.shapes.LeaderDeletes(l, staleCmps, staleKeys...))
			cancel()
			if err != nil {
				return fmt.Errorf("drop stale index entries of %s: %w", dead, err)
			}
		}
		if len(moves) == 0 {
			continue
		}
		_, ok, err := n.commitMoves(ctx, moves, l.Fence(), absent)
		if err != nil {
			return err
		}
		if ok {
			total += len(moves)
			continue
		}
		// A compare failed (a target went away, the dead node came back, an
		// identity moved): read everything again after a breath.
		live = nil
		select {
		case <-time.After(n.cfg.HandoffPeriod / 10):
		case <-ctx.Done():
		}
	}
	return ctx.Err()
}

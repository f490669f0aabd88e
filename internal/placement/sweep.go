package placement

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The leader's sweep: the identities of the nodes that own some but are
// not registered go to the RUNNING nodes, the handoff areas of dead nodes
// that own nothing are dropped, and the cancelled EVERY_NODE tasks past
// their retention are purged. Every write is fenced on the leadership.

// sweep finds nodes that own identities but are not registered, and
// reassigns their identities.
func (ld *Leader) sweep(ctx context.Context, l identity.Leadership) error {
	owners, err := ld.ownerNames(ctx)
	if err != nil {
		return err
	}
	cs, err := ld.cl.Candidates(ctx)
	if err != nil {
		return err
	}
	registered := map[string]bool{}
	for _, c := range cs {
		registered[c.Name] = true
	}
	for _, o := range owners {
		if !registered[o] {
			if err := ld.reassignDead(ctx, l, o); err != nil {
				return err
			}
		}
	}
	// Handoff areas of nodes that are gone and own nothing any more (a
	// task entry written for a node just before it died outlives it).
	areas, err := ld.cl.NamesUnder(ctx, ld.cl.Keys.Handoffs())
	if err != nil {
		return err
	}
	for _, a := range areas {
		if !registered[a] && !slices.Contains(owners, a) {
			absent := clientv3.Compare(clientv3.CreateRevision(ld.cl.Keys.Node(a)), "=", 0)
			if err := ld.dropDeadArea(ctx, l, a, absent); err != nil {
				return err
			}
		}
	}
	return ld.purgeEvery(ctx, l)
}

// dropDeadArea deletes the handoff area of a dead node whose identities
// have all been moved: its entries name tasks whose identities now belong
// to other nodes, which were handed them in the move itself. Fenced on the
// leadership and on the node still being absent.
func (ld *Leader) dropDeadArea(ctx context.Context, l identity.Leadership, dead string, absent clientv3.Cmp) error {
	return ld.commit(ctx, ld.cl.Shapes.DropArea(l, dead, absent), "drop the handoff area of dead node "+dead)
}

// commit writes txn under the etcd timeout; what says what it does, in an
// error.
func (ld *Leader) commit(ctx context.Context, txn writepath.Txn, what string) error {
	cctx, cancel := ld.etcdCtx(ctx)
	defer cancel()
	if _, err := ld.cl.Writer.Commit(cctx, txn); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// purgeEvery deletes the cancelled EVERY_NODE tasks whose retention is
// over, with their history and the nodes' progress (as DeleteTask does).
func (ld *Leader) purgeEvery(ctx context.Context, l identity.Leadership) error {
	cctx, cancel := ld.etcdCtx(ctx)
	defer cancel()
	resp, err := ld.cl.Client.Get(cctx, ld.cl.Keys.AllEvery(), clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("list EVERY_NODE tasks: %w", err)
	}
	for _, kv := range resp.Kvs {
		rec, err := pending.Decode(kv.Value)
		if err != nil || rec.State != taskdv1.TaskState_TASK_STATE_CANCELED ||
			time.Since(rec.GetFinishedAt().AsTime()) < ld.cfg.Retention {
			continue
		}
		ops, err := ld.cfg.Node.EveryDeleteOps(ctx, rec)
		if err != nil {
			return err
		}
		if _, err := ld.cl.Writer.Commit(cctx, ld.cl.Shapes.PurgeEvery(l, string(kv.Key), kv.ModRevision, ops)); err != nil {
			return fmt.Errorf("purge EVERY_NODE task %s: %w", rec.Id, err)
		}
	}
	return nil
}

// ownerNames lists the nodes that have an ownership index.
func (ld *Leader) ownerNames(ctx context.Context) ([]string, error) {
	return ld.cl.NamesUnder(ctx, ld.cl.Keys.AllOwned())
}

// reassignDead moves every identity of the dead node to live RUNNING nodes,
// spread by load, in batched Txns. Each Txn also holds only while this node
// is still the leader and the dead node is still unregistered (it may come
// back under its name and adopt them itself).
func (ld *Leader) reassignDead(ctx context.Context, l identity.Leadership, dead string) error {
	began, total := time.Now(), 0
	batch := ld.cl.MovesPerTxn()
	absent := clientv3.Compare(clientv3.CreateRevision(ld.cl.Keys.Node(dead)), "=", 0)
	var live []*Candidate
	prefix := ld.cl.Map.Keys().OwnedPrefix(dead)
	for ctx.Err() == nil {
		cctx, cancel := ld.etcdCtx(ctx)
		resp, err := ld.cl.Client.Get(cctx, prefix, clientv3.WithPrefix(),
			clientv3.WithKeysOnly(), clientv3.WithLimit(int64(batch)))
		cancel()
		if err != nil {
			return fmt.Errorf("list identities of dead node %s: %w", dead, err)
		}
		if len(resp.Kvs) == 0 {
			if total > 0 {
				ld.log.Info("reassigned the identities of a dead node", "dead", dead, "identities", total,
					"took", time.Since(began).String())
			}
			return ld.dropDeadArea(ctx, l, dead, absent)
		}
		if live == nil {
			// Read once per round of successes: loads are then counted here.
			cs, err := ld.cl.Candidates(ctx)
			if err != nil {
				return err
			}
			for _, c := range cs {
				if c.Name == dead {
					return nil // it came back
				}
			}
			live = Running(cs, dead)
			if len(live) == 0 {
				ld.log.Warn("no RUNNING node to take the identities of a dead node", "dead", dead)
				return nil
			}
			sort.Slice(live, func(i, j int) bool { return live[i].Name < live[j].Name })
		}
		ids := make([]string, 0, len(resp.Kvs))
		gets := make([]clientv3.Op, 0, len(resp.Kvs))
		var junk []string
		for _, kv := range resp.Kvs {
			id, err := keyspace.Decode(string(kv.Key[len(prefix):]))
			if err != nil {
				// No identity encodes to this key: it can only be junk, and
				// left in place it would be listed first forever.
				ld.log.Warn("deleting an index key that names no identity", "key", string(kv.Key))
				junk = append(junk, string(kv.Key))
				continue
			}
			ids = append(ids, id)
			gets = append(gets, clientv3.OpGet(ld.cl.Map.Keys().Mapping(id)))
		}
		if len(junk) > 0 {
			if err := ld.commit(ctx, ld.cl.Shapes.LeaderDeletes(l, nil, junk...), "delete junk index keys of "+dead); err != nil {
				return err
			}
		}
		if len(gets) == 0 {
			continue
		}
		cctx, cancel = ld.etcdCtx(ctx)
		read, err := ld.cl.Writer.Read(cctx, gets...)
		cancel()
		if err != nil {
			return fmt.Errorf("read mappings of dead node %s: %w", dead, err)
		}
		var moves []Move
		var staleKeys []string
		var staleCmps []clientv3.Cmp
		for i, id := range ids {
			owner, err := identity.OwnerFromResponse(id, (*clientv3.GetResponse)(read.Responses[i].GetResponseRange()))
			if err != nil {
				continue
			}
			if !owner.Mapped || owner.Node != dead {
				// The index entry outlived a move: drop it.
				staleCmps = append(staleCmps, ld.cl.Shapes.Epoch(id, owner.Epoch))
				staleKeys = append(staleKeys, ld.cl.Map.Keys().Owned(dead, id))
				continue
			}
			moves = append(moves, Move{From: owner, To: LeastLoaded(live)})
		}
		if len(staleKeys) > 0 {
			if err := ld.commit(ctx, ld.cl.Shapes.LeaderDeletes(l, staleCmps, staleKeys...), "drop stale index entries of "+dead); err != nil {
				return err
			}
		}
		if len(moves) == 0 {
			continue
		}
		_, ok, err := ld.cl.CommitMoves(ctx, moves, l.Fence(), absent)
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
		case <-time.After(ld.cfg.Retry / 10):
		case <-ctx.Done():
		}
	}
	return ctx.Err()
}

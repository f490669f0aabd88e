package ownership

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
)

// This file is adoption: the identities mapped to this node's name are
// re-mapped to this incarnation under a new epoch (which fences anything an
// earlier incarnation still had in flight) and their tasks loaded into the
// engine (contract §5.4).

// AdoptOwned resolves every identity still mapped to this node's name: at
// start, and once the node registered again after losing its lease. Runs
// left marked running become INTERRUPTED as their entries next start.
func (h *Holder) AdoptOwned(ctx context.Context) error {
	cctx, cancel := h.etcdCtx(ctx)
	ids, err := h.cfg.Map.ListOwned(cctx, h.cfg.Name)
	cancel()
	if err != nil {
		return err
	}
	// Identities go in batches: their mappings read in one Txn, re-mapped
	// in one Txn, and their tasks read in one Txn, so that a node with
	// many identities is back at once (contract §5.4).
	size := max(1, min(200, (h.cfg.MaxTxnOps-8)/2))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, 4)
	)
	for len(ids) > 0 {
		batch := ids[:min(size, len(ids))]
		ids = ids[len(batch):]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := h.adoptBatch(ctx, batch); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// adoptBatch adopts identities of this node's ownership index in three
// Txns; an identity whose mapping changed meanwhile is adopted on its own.
func (h *Holder) adoptBatch(ctx context.Context, ids []string) error {
	keys := h.cfg.Map.Keys()
	gets := make([]clientv3.Op, len(ids))
	for i, id := range ids {
		gets[i] = clientv3.OpGet(keys.Mapping(id))
	}
	cctx, cancel := h.etcdCtx(ctx)
	read, err := h.cfg.Writer.Read(cctx, gets...)
	cancel()
	if err != nil {
		return fmt.Errorf("read mappings: %w", err)
	}
	var mine []identity.Owner
	for i, id := range ids {
		owner, err := identity.OwnerFromResponse(id, (*clientv3.GetResponse)(read.Responses[i].GetResponseRange()))
		if err != nil {
			return err
		}
		if h.mine(owner) {
			mine = append(mine, owner) // else: moved away; the index entry is stale
		}
	}
	if len(mine) == 0 {
		return nil
	}
	owned := make([]writepath.Owned, len(mine))
	for i, o := range mine {
		owned[i] = writepath.Owned{Identity: o.Identity, Epoch: o.Epoch}
	}
	cctx, cancel = h.etcdCtx(ctx)
	resp, err := h.cfg.Writer.Commit(cctx, h.cfg.Shapes.Adopt(h.cfg.Member.RegisteredCmp(), h.cfg.Incarnation, owned))
	cancel()
	if err != nil {
		return fmt.Errorf("re-map identities: %w", err)
	}
	if !resp.Succeeded {
		for _, o := range mine {
			if err := h.adoptOne(ctx, o.Identity); err != nil {
				return err
			}
		}
		return nil
	}
	epoch := resp.Header.Revision
	// The tasks of the batch, at one revision; an identity with more than
	// a page of tasks is read on its own.
	loads := make([]clientv3.Op, len(mine))
	for i, o := range mine {
		loads[i] = clientv3.OpGet(h.cfg.Keys.Tasks(o.Identity), clientv3.WithPrefix(), clientv3.WithLimit(1000))
	}
	cctx, cancel = h.etcdCtx(ctx)
	tasks, err := h.cfg.Writer.Read(cctx, loads...)
	cancel()
	if err != nil {
		return fmt.Errorf("load tasks: %w", err)
	}
	for i, o := range mine {
		rr := tasks.Responses[i].GetResponseRange()
		if rr.More {
			cctx, cancel := h.etcdCtx(ctx)
			err := h.AdoptIdentity(cctx, o.Identity, epoch)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		stored, err := h.storedOf(rr.Kvs)
		if err != nil {
			return err
		}
		h.engine.Install(o.Identity, epoch, stored, tasks.Header.Revision)
	}
	return nil
}

// adoptOne re-maps id to this incarnation under a new epoch, if it is
// still mapped to this node's name, and loads its tasks.
func (h *Holder) adoptOne(ctx context.Context, id string) error {
	for range 3 {
		cctx, cancel := h.etcdCtx(ctx)
		owner, err := h.cfg.Map.Get(cctx, id)
		if err != nil {
			cancel()
			return err
		}
		if !h.mine(owner) {
			cancel()
			return nil // moved away; the index entry is stale
		}
		resp, err := h.cfg.Writer.Commit(cctx, h.cfg.Shapes.Reassign(id, owner.Epoch, owner.Node, h.cfg.Incarnation, h.cfg.Member.RegisteredCmp()))
		cancel()
		if err != nil {
			return fmt.Errorf("reassign %q to %s: %w", id, h.cfg.Name, err)
		}
		if !resp.Succeeded {
			continue
		}
		epoch := resp.Header.Revision
		cctx, cancel = h.etcdCtx(ctx)
		err = h.AdoptIdentity(cctx, id, epoch)
		cancel()
		return err
	}
	return fmt.Errorf("adopt identity %q: mapping kept changing", id)
}

// AdoptIdentity loads every task of id under epoch into the engine.
// Entries with a run in flight here are left alone; run markers of runs not
// in flight here are resolved.
//
// An epoch older than the node's current registration (the node registered
// again after losing its lease, and the identity has not been re-mapped
// since) is not used: the identity is re-mapped to this registration first
// (adoptOne), so that every run this node starts is under an epoch written
// while its current registration stood.
func (h *Holder) AdoptIdentity(ctx context.Context, id string, epoch int64) error {
	if epoch < h.cfg.Member.RegisteredRev() {
		return h.adoptOne(ctx, id)
	}
	stored, rev, err := h.cfg.Store.LoadAll(ctx, id)
	if err != nil {
		return err
	}
	h.engine.Install(id, epoch, stored, rev)
	return nil
}

// storedOf turns the task keys of one identity, read to load it, into
// stored tasks. A record due beyond ColdAfter from now is only glanced at
// (pending.GlanceAt), not decoded: the engine queues it cold, and its
// record is read again before it is due, as for any cold task. A node that
// loads many far-future tasks (its restart, a dead node's identities)
// thereby skips most of the decoding and the garbage it makes.
func (h *Holder) storedOf(kvs []*mvccpb.KeyValue) ([]pending.Stored, error) {
	stored := make([]pending.Stored, 0, len(kvs))
	now := time.Now()
	for _, kv := range kvs {
		if h.cfg.ColdAfter > 0 {
			if g, ok := pending.GlanceAt(kv.Value); ok && g.Due.Sub(now) > h.cfg.ColdAfter {
				stored = append(stored, pending.Stored{Rev: kv.ModRevision, Glance: g, Raw: kv.Value})
				continue
			}
		}
		rec, err := pending.Decode(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("task key %s: %w", kv.Key, err)
		}
		stored = append(stored, pending.Stored{Rec: rec, Rev: kv.ModRevision})
	}
	return stored, nil
}

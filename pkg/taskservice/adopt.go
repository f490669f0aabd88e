package taskservice

import (
	"context"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
)

// This file is how identities arrive at and leave this node's queue:
// adoption of the identities mapped to it (adoptOwned, adoptBatch,
// adoptOne), the loading of an identity's tasks under an epoch
// (installTasks), and the reaction to a failed fence or a move
// (identityMoved, dropIdentityLocked). Moves themselves are placement.go's
// and drain.go's; handoff pick-up is handoff.go's.

func (n *Node) removeEntryLocked(e *entry) {
	e.gone = true
	n.queue.remove(e)
	n.dropWorkerWaitLocked(e)
	n.dropShadowLocked(e)
	delete(n.parked, e)
	if e.ident.tasks.get(e.id) == e {
		e.ident.tasks.del(e.id)
	}
	n.touchLocked(e)
}

// identityMoved reacts to a failed fence: if the identity is still mapped to
// this incarnation under a newer epoch, its tasks are loaded again under
// that epoch; otherwise the identity is no longer this node's.
func (n *Node) identityMoved(st *identState, owner identity.Owner) {
	if owner.Mapped && owner.Node == n.cfg.Name && owner.Incarnation == n.incarnation {
		n.spawn(func() {
			ctx, cancel := n.etcdCtx(n.life)
			defer cancel()
			if err := n.adoptIdentity(ctx, st.name, owner.Epoch); err != nil {
				n.log.Warn("reload identity under its new epoch", "identity", st.name, "error", err)
				n.repair(st.name)
			}
		})
		return
	}
	n.mu.Lock()
	if cur := n.idents[st.name]; cur == st {
		n.dropIdentityLocked(st)
	}
	n.mu.Unlock()
	n.log.Info("identity no longer owned here", "identity", st.name, "owner", owner.Node, "epoch", owner.Epoch)
	if owner.Mapped && owner.Node == n.cfg.Name {
		// Mapped to an earlier incarnation of this name, which is gone:
		// nothing would run it. Adopt it.
		n.repair(st.name)
	}
}

// dropIdentityLocked forgets an identity: its timers stop, and a run that
// tries to start or commit for it afterwards is dropped. Its runs in flight
// go on (their results reach the new owner) and are told it left.
func (n *Node) dropIdentityLocked(st *identState) {
	st.lost = true
	for e := range st.tasks.all() {
		n.queue.remove(e)
		n.dropShadowLocked(e)
		delete(n.parked, e)
		e.counted = false
	}
	n.forgetWaitingLocked(st)
	if r := st.run; r != nil {
		r.startQ, r.grantQ = nil, nil
	}
	delete(n.idents, st.name)
	n.identityLeftFlightsLocked(st.name)
	n.voter.Forget(st.name) // a move clears the old node's votes
}

// adoptOwned resolves, at start, every identity still mapped to this node's
// name (contract §5.4): each is re-mapped to this incarnation under a new epoch
// (which fences anything the previous incarnation still had in flight), its
// tasks are loaded, and runs left marked running become INTERRUPTED.
func (n *Node) adoptOwned(ctx context.Context) error {
	cctx, cancel := n.etcdCtx(ctx)
	ids, err := n.idmap.ListOwned(cctx, n.cfg.Name)
	cancel()
	if err != nil {
		return err
	}
	// Identities go in batches: their mappings read in one Txn, re-mapped
	// in one Txn, and their tasks read in one Txn, so that a node with
	// many identities is back at once (contract §5.4).
	size := max(1, min(200, (n.cfg.MaxTxnOps-8)/2))
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
			if err := n.adoptBatch(ctx, batch); err != nil {
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
func (n *Node) adoptBatch(ctx context.Context, ids []string) error {
	keys := n.idmap.Keys()
	gets := make([]clientv3.Op, len(ids))
	for i, id := range ids {
		gets[i] = clientv3.OpGet(keys.Mapping(id))
	}
	cctx, cancel := n.etcdCtx(ctx)
	read, err := n.writer.Read(cctx, gets...)
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
		if owner.Mapped && owner.Node == n.cfg.Name {
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
	cctx, cancel = n.etcdCtx(ctx)
	resp, err := n.writer.Commit(cctx, n.shapes.Adopt(n.member.RegisteredCmp(), n.incarnation, owned))
	cancel()
	if err != nil {
		return fmt.Errorf("re-map identities: %w", err)
	}
	if !resp.Succeeded {
		for _, o := range mine {
			if err := n.adoptOne(ctx, o.Identity); err != nil {
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
		loads[i] = clientv3.OpGet(n.keys.Tasks(o.Identity), clientv3.WithPrefix(), clientv3.WithLimit(1000))
	}
	cctx, cancel = n.etcdCtx(ctx)
	tasks, err := n.writer.Read(cctx, loads...)
	cancel()
	if err != nil {
		return fmt.Errorf("load tasks: %w", err)
	}
	for i, o := range mine {
		rr := tasks.Responses[i].GetResponseRange()
		if rr.More {
			cctx, cancel := n.etcdCtx(ctx)
			err := n.adoptIdentity(cctx, o.Identity, epoch)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		stored, err := n.storedOf(rr.Kvs)
		if err != nil {
			return err
		}
		n.installTasks(o.Identity, epoch, stored, tasks.Header.Revision)
	}
	return nil
}

func (n *Node) adoptOne(ctx context.Context, id string) error {
	for range 3 {
		cctx, cancel := n.etcdCtx(ctx)
		owner, err := n.idmap.Get(cctx, id)
		if err != nil {
			cancel()
			return err
		}
		if !owner.Mapped || owner.Node != n.cfg.Name {
			cancel()
			return nil // moved away; the index entry is stale
		}
		resp, err := n.writer.Commit(cctx, n.shapes.Reassign(id, owner.Epoch, owner.Node, n.incarnation, n.member.RegisteredCmp()))
		cancel()
		if err != nil {
			return fmt.Errorf("reassign %q to %s: %w", id, n.cfg.Name, err)
		}
		if !resp.Succeeded {
			continue
		}
		epoch := resp.Header.Revision
		cctx, cancel = n.etcdCtx(ctx)
		err = n.adoptIdentity(cctx, id, epoch)
		cancel()
		return err
	}
	return fmt.Errorf("adopt identity %q: mapping kept changing", id)
}

// adoptIdentity loads every task of id under epoch into the queue. Entries
// with a run in flight here are left alone; run markers of runs not in
// flight here are resolved.
//
// An epoch older than the node's current registration (the node registered
// again after losing its lease, and the identity has not been re-mapped
// since) is not used: the identity is re-mapped to this registration first
// (adoptOne), so that every run this node starts is under an epoch written
// while its current registration stood.
func (n *Node) adoptIdentity(ctx context.Context, id string, epoch int64) error {
	stale := epoch < n.member.RegisteredRev()
	if stale {
		return n.adoptOne(ctx, id)
	}
	stored, rev, err := n.store.LoadAll(ctx, id)
	if err != nil {
		return err
	}
	n.installTasks(id, epoch, stored, rev)
	return nil
}

// installTasks puts stored tasks of id, owned under epoch, into the queue.
// With loadRev > 0, stored is every task of the identity as of that
// revision, and entries it lacks are removed unless they were written
// after it (a task scheduled while the load was under way). An entry whose
// task has a run in flight here waits for that run to settle; a run marker
// of no run in flight here is resolved by the entry's next start.
func (n *Node) installTasks(id string, epoch int64, stored []pending.Stored, loadRev int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.idents[id]
	if st == nil || st.lost {
		st = &identState{name: id, scope: ownedScope{}}
		n.idents[id] = st
		n.voter.Track(id)
	}
	if epoch < st.epoch {
		return // a newer adoption already happened
	}
	adopted := epoch > st.epoch // loaded by a new owner: at start, adoption, a move
	st.epoch = epoch
	seen := make(map[string]bool, len(stored))
	for _, s := range stored {
		tid := s.TaskID()
		seen[tid] = true
		e := st.tasks.get(tid)
		if e == nil {
			e = &entry{ident: st, id: tid, idx: -1}
			st.tasks.put(e)
		}
		if e.running && s.Rev > e.rev && !n.unwaitLocked(e) { // a waiting run takes the change now
			n.taskChangedLocked(e) // an armed run is not called
		}
		if e.running || ((e.rec != nil || e.raw != "" || e.cold()) && e.rev > s.Rev) {
			continue
		}
		if s.Rec == nil && n.installColdLocked(e, &s) {
			continue
		}
		if s.Rec == nil {
			// Glanced at but needed now after all (in flight here, or
			// paused): decoded whole.
			rec, err := pending.Decode(s.Raw)
			if err != nil {
				n.log.Error("a stored task cannot be decoded; left out", "identity", id, "task", e.id, "error", err)
				continue
			}
			s.Rec = rec
		}
		e.rec, e.raw, e.rev = s.Rec, "", s.Rev
		// A reload may bring what an entry waits for (a handoff entry comes
		// with a result forwarded by the previous owner): look again now,
		// not at the next recheck.
		if e.x != nil {
			e.x.recheckAt = 0
		}
		if n.inFlightLocked(e.ref()) {
			e.running = true
			n.queue.remove(e)
			n.touchLocked(e)
			continue
		}
		if adopted {
			n.takeLocked(e) // what passed while the identity moved is caught up
		} else {
			n.reschedLocked(e)
		}
	}
	if loadRev > 0 {
		for e := range st.tasks.all() {
			if !seen[e.id] && !e.running && e.rev <= loadRev {
				n.removeEntryLocked(e)
			}
		}
	}
}

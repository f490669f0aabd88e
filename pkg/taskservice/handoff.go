package taskservice

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdstatus"
	"github.com/taskd/taskd/internal/etcdwatch"
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/handoff"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
)

// This file is the receiving side of handoff (contract §3.4) and the watch on
// the node's ownership index that tells it an identity left (contract §3.3).

// handoffLoop runs the watcher of this node's handoff area.
func (n *Node) handoffLoop(ctx context.Context) {
	w := &handoff.Watcher{
		Client:  n.cli,
		Keys:    n.keys,
		Node:    n.cfg.Name,
		Period:  n.cfg.HandoffPeriod,
		Start:   n.cfg.HandoffStart,
		NoWatch: n.cfg.DisableHandoffWatch,
		Timeout: n.cfg.EtcdTimeout,
		Log:     n.log,
		// Two reads per entry in one Txn (takeHandoffs).
		BatchSize:   max(1, min(64, n.cfg.MaxTxnOps/2)),
		HandleBatch: n.takeHandoffs,
		Delete:      writepath.HandoffDeleter(n.writer),
	}
	w.Run(ctx)
}

// takeHandoff loads what an entry names, if this node owns the identity;
// an entry for an identity owned elsewhere is stale (a move wrote the new
// owner an entry of its own) and is dropped.
func (n *Node) takeHandoff(ctx context.Context, e handoff.Entry) error {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	owner, err := n.idmap.Get(cctx, e.Identity)
	if err != nil {
		return err
	}
	if !owner.Mapped || owner.Node != n.cfg.Name {
		return nil
	}
	if owner.Incarnation != n.incarnation {
		// Still mapped to an earlier incarnation of this name.
		return n.adoptOne(ctx, e.Identity)
	}
	n.mu.Lock()
	st := n.idents[e.Identity]
	have := st != nil && !st.lost && st.epoch == owner.Epoch
	n.mu.Unlock()
	if e.TaskID == "*" || !have {
		if err := n.adoptIdentity(cctx, e.Identity, owner.Epoch); err != nil {
			return err
		}
		n.log.Debug("handed off", "identity", e.Identity, "from", e.From, "epoch", owner.Epoch)
		n.emit(Event{Type: EventHandedOff, Identity: e.Identity, Message: "from " + e.From})
		return nil
	}
	stored, ok, err := n.store.Get(cctx, e.Identity, e.TaskID)
	if err != nil {
		return err
	}
	if !ok {
		n.mu.Lock()
		if x := st.tasks.get(e.TaskID); x != nil && (!x.running || n.unwaitLocked(x)) {
			n.removeEntryLocked(x)
		}
		n.mu.Unlock()
		return nil
	}
	n.installTasks(e.Identity, owner.Epoch, []pending.Stored{stored}, 0)
	n.emit(Event{Type: EventHandedOff, Identity: e.Identity, TaskID: e.TaskID, Kind: stored.Rec.Spec.GetKind(),
		Message: "from " + e.From})
	return nil
}

// handoffLoadLimit bounds the tasks of one identity read with a batch of
// handoff entries; an identity with more is loaded on its own, in pages.
const handoffLoadLimit = 500

// takeHandoffs takes a batch of handoff entries (a dead node's identities
// arrive by the thousand) with one read for the whole batch: a Txn that
// reads, for each entry, its identity's mapping and the tasks it names (all
// the identity's tasks, or the one task for an identity already held here),
// at one revision. What that read settles is installed as takeHandoff would;
// an entry it cannot settle (an identity mapped to an earlier incarnation
// of this name, or adopted under an epoch older than this registration, or
// with more tasks than one read returns, or a task named for an identity
// that was not held when the read was planned) is taken by takeHandoff.
// A read refused for its size (or whose answer is too large to receive) is
// split in halves, down to an entry taken alone by takeHandoff.
func (n *Node) takeHandoffs(ctx context.Context, es []handoff.Entry) []error {
	began := time.Now()
	errs := make([]error, len(es))
	one := make([]bool, len(es)) // read the one task, not all
	n.mu.Lock()
	for i, e := range es {
		st := n.idents[e.Identity]
		one[i] = e.TaskID != "*" && st != nil && !st.lost
	}
	registered := n.member.RegisteredRev()
	n.mu.Unlock()
	ops := make([]clientv3.Op, 0, 2*len(es))
	for i, e := range es {
		ops = append(ops, clientv3.OpGet(n.idmap.Keys().Mapping(e.Identity)))
		if one[i] {
			ops = append(ops, clientv3.OpGet(n.keys.Task(e.Identity, e.TaskID)))
		} else {
			prefix := n.keys.Tasks(e.Identity)
			ops = append(ops, clientv3.OpGet(prefix, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)),
				clientv3.WithLimit(handoffLoadLimit)))
		}
	}
	cctx, cancel := n.etcdCtx(ctx)
	resp, err := n.writer.Read(cctx, ops...)
	cancel()
	if err != nil && etcdstatus.TooLarge(err) {
		// The read (or its answer) is too large as a whole: one identity
		// with large tasks must not hold back its neighbours. Each half is
		// read on its own, down to one entry, which is taken alone (its
		// tasks read in pages that fit).
		if len(es) == 1 {
			errs[0] = n.takeHandoff(ctx, es[0])
			return errs
		}
		half := len(es) / 2
		return append(n.takeHandoffs(ctx, es[:half]), n.takeHandoffs(ctx, es[half:])...)
	}
	if err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("read a batch of %d handoff entries: %w", len(es), err)
		}
		return errs
	}
	rev := resp.Header.Revision
	for i, e := range es {
		errs[i] = n.takeRead(ctx, e, one[i], registered, rev,
			(*clientv3.GetResponse)(resp.Responses[2*i].GetResponseRange()),
			(*clientv3.GetResponse)(resp.Responses[2*i+1].GetResponseRange()))
		if errs[i] == nil && n.cfg.Observer.HandoffTaken != nil {
			n.cfg.Observer.HandoffTaken(time.Since(began))
		}
	}
	return errs
}

// takeRead takes one entry of a batch from what takeHandoffs read at rev:
// the identity's mapping, and its tasks (or the one task, when one).
func (n *Node) takeRead(ctx context.Context, e handoff.Entry, one bool, registered, rev int64, mapping, tasks *clientv3.GetResponse) error {
	owner, err := identity.OwnerFromResponse(e.Identity, mapping)
	if err != nil {
		return err
	}
	if !owner.Mapped || owner.Node != n.cfg.Name {
		return nil // stale: a later move wrote the new owner an entry of its own
	}
	if owner.Incarnation != n.incarnation || owner.Epoch < registered || tasks.More {
		return n.takeHandoff(ctx, e)
	}
	n.mu.Lock()
	st := n.idents[e.Identity]
	have := st != nil && !st.lost && st.epoch == owner.Epoch
	n.mu.Unlock()
	if e.TaskID == "*" || !have {
		if one {
			return n.takeHandoff(ctx, e) // it read one task; all are needed
		}
		stored, err := n.storedOf(tasks.Kvs)
		if err != nil {
			return err
		}
		n.installTasks(e.Identity, owner.Epoch, stored, rev)
		n.log.Debug("handed off", "identity", e.Identity, "from", e.From, "epoch", owner.Epoch)
		n.emit(Event{Type: EventHandedOff, Identity: e.Identity, Message: "from " + e.From})
		return nil
	}
	if !one {
		return n.takeHandoff(ctx, e) // held now, not when the read was planned
	}
	if len(tasks.Kvs) == 0 {
		n.mu.Lock()
		if x := st.tasks.get(e.TaskID); x != nil && (!x.running || n.unwaitLocked(x)) {
			n.removeEntryLocked(x)
		}
		n.mu.Unlock()
		return nil
	}
	rec, err := pending.Decode(tasks.Kvs[0].Value)
	if err != nil {
		return fmt.Errorf("task key %s: %w", tasks.Kvs[0].Key, err)
	}
	n.installTasks(e.Identity, owner.Epoch, []pending.Stored{{Rec: rec, Rev: tasks.Kvs[0].ModRevision}}, 0)
	n.emit(Event{Type: EventHandedOff, Identity: e.Identity, TaskID: e.TaskID, Kind: rec.Spec.GetKind(),
		Message: "from " + e.From})
	return nil
}

// handoffOp is the write that tells node to load a task of id ("*": all of
// them).
func (n *Node) handoffOp(node, id, taskID string) (clientv3.Op, error) {
	return n.shapes.Handoff(node, id, taskID)
}

// ownershipLoop watches this node's ownership index: a deleted entry means
// the identity was moved away or unmapped, so the node cancels its timers
// for it; runs in flight finish and fail their fence. After any break of
// the watch the index is listed again and identities not in it dropped.
func (n *Node) ownershipLoop(ctx context.Context) {
	prefix := n.idmap.Keys().OwnedPrefix(n.cfg.Name)
	n.watch.Follow(ctx, "ownership index", etcdwatch.Follower{
		Key:     prefix,
		Options: []clientv3.OpOption{clientv3.WithPrefix()},
		List:    n.reconcileOwned,
		Events: func(_ context.Context, evs []*clientv3.Event) {
			for _, ev := range evs {
				id, err := keyspace.Decode(string(ev.Kv.Key[len(prefix):]))
				if err != nil {
					continue
				}
				if ev.Type == clientv3.EventTypeDelete {
					n.identityLeft(id, ev.Kv.ModRevision)
					continue
				}
				// Mapped to this name: the handoff or schedule that did it
				// loads it; if nothing has after a while, look for ourselves.
				n.repairIfMissing(id, ownedGrace)
			}
		},
	})
}

// reconcileOwned drops identities no longer in the ownership index and
// returns the revision it read at.
func (n *Node) reconcileOwned(ctx context.Context) (int64, error) {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	prefix := n.idmap.Keys().OwnedPrefix(n.cfg.Name)
	resp, err := n.cli.Get(cctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, err
	}
	in := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if id, err := keyspace.Decode(string(kv.Key[len(prefix):])); err == nil {
			in[id] = true
		}
	}
	n.mu.Lock()
	var gone []string
	for id := range n.idents {
		if !in[id] {
			gone = append(gone, id)
		}
	}
	var missing []string
	for id := range in {
		if st := n.idents[id]; st == nil || st.lost {
			missing = append(missing, id)
		}
	}
	n.mu.Unlock()
	for _, id := range gone {
		n.identityLeft(id, resp.Header.Revision)
	}
	for _, id := range missing {
		n.repairIfMissing(id, ownedGrace)
	}
	return resp.Header.Revision, nil
}

// ownedGrace is how long an identity may sit in this node's ownership index
// without the node holding it before the node looks for itself: longer than
// a handoff pick-up or a schedule's own follow-up normally takes.
const ownedGrace = 2 * time.Second

// identityLeft drops an identity that is no longer this node's, unless it
// was adopted again at a later revision than rev.
func (n *Node) identityLeft(id string, rev int64) {
	n.mu.Lock()
	st := n.idents[id]
	if st == nil || st.lost || st.epoch > rev {
		n.mu.Unlock()
		return
	}
	n.dropIdentityLocked(st)
	n.mu.Unlock()
	n.log.Debug("identity moved away", "identity", id)
	n.emit(Event{Type: EventMoved, Identity: id})
}

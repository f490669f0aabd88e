package ownership

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdstatus"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/handoff"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
)

// This file is the receiving side of handoff (contract §3.4): the entries
// other nodes (and the placement leader) write into this node's handoff
// area name the identities, or the single tasks, it is to load.

// RunHandoff runs the watcher of this node's handoff area until ctx ends.
func (h *Holder) RunHandoff(ctx context.Context) {
	w := &handoff.Watcher{
		Client:  h.cfg.Client,
		Keys:    h.cfg.Keys,
		Node:    h.cfg.Name,
		Period:  h.cfg.HandoffPeriod,
		Start:   h.cfg.HandoffStart,
		NoWatch: h.cfg.DisableHandoffWatch,
		Timeout: h.cfg.EtcdTimeout,
		Log:     h.log,
		// Two reads per entry in one Txn (takeHandoffs).
		BatchSize:   max(1, min(64, h.cfg.MaxTxnOps/2)),
		HandleBatch: h.takeHandoffs,
		Delete:      writepath.HandoffDeleter(h.cfg.Writer),
	}
	w.Run(ctx)
}

// takeHandoff loads what an entry names, if this node owns the identity;
// an entry for an identity owned elsewhere is stale (a move wrote the new
// owner an entry of its own) and is dropped.
func (h *Holder) takeHandoff(ctx context.Context, e handoff.Entry) error {
	cctx, cancel := h.etcdCtx(ctx)
	defer cancel()
	owner, err := h.cfg.Map.Get(cctx, e.Identity)
	if err != nil {
		return err
	}
	if !h.mine(owner) {
		return nil
	}
	if owner.Incarnation != h.cfg.Incarnation {
		// Still mapped to an earlier incarnation of this name.
		return h.adoptOne(ctx, e.Identity)
	}
	if e.TaskID == "*" || !h.holds(e.Identity, owner.Epoch) {
		if err := h.AdoptIdentity(cctx, e.Identity, owner.Epoch); err != nil {
			return err
		}
		h.handedOffAll(e, owner.Epoch)
		return nil
	}
	stored, ok, err := h.cfg.Store.Get(cctx, e.Identity, e.TaskID)
	if err != nil {
		return err
	}
	if !ok {
		h.engine.TaskGone(e.Identity, e.TaskID)
		return nil
	}
	h.engine.Install(e.Identity, owner.Epoch, []pending.Stored{stored}, 0)
	h.engine.HandedOff(e.Identity, e.TaskID, stored.Rec.Spec.GetKind(), e.From)
	return nil
}

// holds reports whether the engine holds id under epoch.
func (h *Holder) holds(id string, epoch int64) bool {
	have, ok := h.engine.Held(id)
	return ok && have == epoch
}

// handedOffAll logs and announces that entry e brought all of its
// identity's tasks.
func (h *Holder) handedOffAll(e handoff.Entry, epoch int64) {
	h.log.Debug("handed off", "identity", e.Identity, "from", e.From, "epoch", epoch)
	h.engine.HandedOff(e.Identity, "", "", e.From)
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
func (h *Holder) takeHandoffs(ctx context.Context, es []handoff.Entry) []error {
	began := time.Now()
	errs := make([]error, len(es))
	one := make([]bool, len(es)) // read the one task, not all
	for i, e := range es {
		_, held := h.engine.Held(e.Identity)
		one[i] = e.TaskID != "*" && held
	}
	registered := h.cfg.Member.RegisteredRev()
	ops := make([]clientv3.Op, 0, 2*len(es))
	for i, e := range es {
		ops = append(ops, clientv3.OpGet(h.cfg.Map.Keys().Mapping(e.Identity)))
		if one[i] {
			ops = append(ops, clientv3.OpGet(h.cfg.Keys.Task(e.Identity, e.TaskID)))
		} else {
			prefix := h.cfg.Keys.Tasks(e.Identity)
			ops = append(ops, clientv3.OpGet(prefix, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)),
				clientv3.WithLimit(handoffLoadLimit)))
		}
	}
	cctx, cancel := h.etcdCtx(ctx)
	resp, err := h.cfg.Writer.Read(cctx, ops...)
	cancel()
	if err != nil && etcdstatus.TooLarge(err) {
		// The read (or its answer) is too large as a whole: one identity
		// with large tasks must not hold back its neighbours. Each half is
		// read on its own, down to one entry, which is taken alone (its
		// tasks read in pages that fit).
		if len(es) == 1 {
			errs[0] = h.takeHandoff(ctx, es[0])
			return errs
		}
		half := len(es) / 2
		return append(h.takeHandoffs(ctx, es[:half]), h.takeHandoffs(ctx, es[half:])...)
	}
	if err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("read a batch of %d handoff entries: %w", len(es), err)
		}
		return errs
	}
	rev := resp.Header.Revision
	for i, e := range es {
		errs[i] = h.takeRead(ctx, e, one[i], registered, rev,
			(*clientv3.GetResponse)(resp.Responses[2*i].GetResponseRange()),
			(*clientv3.GetResponse)(resp.Responses[2*i+1].GetResponseRange()))
		if errs[i] == nil && h.cfg.HandoffTaken != nil {
			h.cfg.HandoffTaken(time.Since(began))
		}
	}
	return errs
}

// takeRead takes one entry of a batch from what takeHandoffs read at rev:
// the identity's mapping, and its tasks (or the one task, when one).
func (h *Holder) takeRead(ctx context.Context, e handoff.Entry, one bool, registered, rev int64, mapping, tasks *clientv3.GetResponse) error {
	owner, err := identity.OwnerFromResponse(e.Identity, mapping)
	if err != nil {
		return err
	}
	if !h.mine(owner) {
		return nil // stale: a later move wrote the new owner an entry of its own
	}
	if owner.Incarnation != h.cfg.Incarnation || owner.Epoch < registered || tasks.More {
		return h.takeHandoff(ctx, e)
	}
	if e.TaskID == "*" || !h.holds(e.Identity, owner.Epoch) {
		if one {
			return h.takeHandoff(ctx, e) // it read one task; all are needed
		}
		stored, err := h.storedOf(tasks.Kvs)
		if err != nil {
			return err
		}
		h.engine.Install(e.Identity, owner.Epoch, stored, rev)
		h.handedOffAll(e, owner.Epoch)
		return nil
	}
	if !one {
		return h.takeHandoff(ctx, e) // held now, not when the read was planned
	}
	if len(tasks.Kvs) == 0 {
		h.engine.TaskGone(e.Identity, e.TaskID)
		return nil
	}
	rec, err := pending.Decode(tasks.Kvs[0].Value)
	if err != nil {
		return fmt.Errorf("task key %s: %w", tasks.Kvs[0].Key, err)
	}
	h.engine.Install(e.Identity, owner.Epoch, []pending.Stored{{Rec: rec, Rev: tasks.Kvs[0].ModRevision}}, 0)
	h.engine.HandedOff(e.Identity, e.TaskID, rec.Spec.GetKind(), e.From)
	return nil
}

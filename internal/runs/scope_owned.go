package runs

import (
	"context"
	"errors"

	"time"

	"github.com/taskd/taskd/internal/backoff"
	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// ownedScope is the scope of IDENTITY tasks of an identity this node owns:
// stored, started and committed fenced on the identity's epoch and the
// task's revision.
type ownedScope struct{}

func (ownedScope) ownsRecord() bool { return true }

func (ownedScope) snapLocked(e *held.Entry, s *startSnap) { s.epoch = e.Ident.Epoch }

// writeStart writes the task key, fenced on the identity's epoch and the
// task's revision, through the batcher.
func (ownedScope) writeStart(n *Path, e *held.Entry, p startPlan, snap startSnap) (int64, func(), bool) {
	st := e.Ident
	// Besides the epoch and the task, a start is fenced on this node's own
	// registration, under the lease it had when the start was planned
	// (writepath.Lease), and on the pauses of its identity and kind
	// (internal/dispatch/pauses.go).
	kind := p.Rec.GetSpec().GetKind()
	txn, err := n.writes.Shapes.Start(writepath.RunFence{Identity: st.Name, Task: e.ID, Epoch: snap.epoch, TaskRev: snap.rev},
		writepath.Lease(snap.lease), writepath.Pauses{Identity: st.Name, Kind: kind}, p.Rec)
	if err != nil {
		n.log.Error("encode task", "task", e.ID, "error", err)
		n.settleNotStarted(e, time.Second)
		return 0, nil, false
	}
	parent := n.life.Ctx
	if p.before != nil {
		parent = context.WithoutCancel(n.life.Ctx) // armed ahead
	}
	ctx, cancel := n.startCtxFrom(parent)
	out := n.writes.Batch.Do(ctx, txn)
	cancel()
	if errors.Is(out.Err, writepath.ErrTooLarge) {
		// The task's record is too large to write (one stored before its
		// fields had limits): nothing was written, and sending it again
		// every second cannot help; it is tried again after a minute, and
		// a cancel of the task (which makes it smaller) ends it.
		n.log.Error("start run: the task's record is too large to write", "identity", st.Name, "task", e.ID, "error", out.Err)
		n.settleNotStarted(e, time.Minute)
		return 0, nil, false
	}
	if out.Err != nil {
		// If the write was applied after all, the next attempt's compare
		// fails, finds this marker and resolves it (the handler was not
		// called, so the fire time runs again).
		n.log.Warn("start run: etcd write failed; will retry", "identity", st.Name, "task", e.ID,
			"maybe_applied", !out.NotSent, "error", out.Err)
		n.settleNotStarted(e, time.Second)
		return 0, nil, false
	}
	if !out.OK {
		if n.followers.pauses.LearnRefusal(st.Name, kind, out.Refusal.PauseIdentity, out.Refusal.PauseKind) {
			n.putBack(e) // parks it: the pause is known now
			return 0, nil, false
		}
		n.conflict(e, snap.epoch, out.Refusal)
		return 0, nil, false
	}
	return out.Rev, func() { e.Rec, e.Raw, e.Rev = p.Rec, "", out.Rev }, true
}

func (ownedScope) beginCommit(_ *Path, _ *held.Entry, _ *held.Flight, p startPlan, _ runResult, _ Event, _ EventType, epoch, rev int64) *commitState {
	return &commitState{base: p.Rec, epoch: epoch, rev: rev}
}

// resultWrite is the task and its history, fenced on the identity's epoch
// and the task's revision; Else reads the mapping and the task.
func (ownedScope) resultWrite(n *Path, e *held.Entry, c *commitState, rec *storev1.TaskRecord, hist *taskdv1.Run) (resultTxn, error) {
	st := e.Ident

	// hist nil: an armed run undone leaves no history.
	txn, err := n.writes.Shapes.Commit(writepath.RunFence{Identity: st.Name, Task: e.ID, Epoch: c.epoch, TaskRev: c.rev}, rec, hist, n.cfg.History)
	if err != nil {
		return resultTxn{}, err
	}
	return resultTxn{txn: txn, committed: func(int64) *storev1.TaskRecord { return rec }}, nil
}

// commitConflict: if the run's marker is gone (the identity's owner
// resolved it, and may run the fire time again) the run is DROPPED, unless
// an attempt whose reply was lost committed it; if the marker still stands
// and the identity is this incarnation's (under a newer epoch: it moved
// away and back, or the node rejoined) the result is committed under the
// current epoch; if it moved to another node, the result is forwarded to
// it (markers.go); a changed task (cancel, run-now) is folded in.
func (ownedScope) commitConflict(n *Path, e *held.Entry, f *held.Flight, c *commitState, p startPlan, res runResult,
	r writepath.Refusal, ev Event, outcomeEvent EventType) (bool, error) {
	st := e.Ident

	owner, oerr := identity.OwnerFromResponse(st.Name, r.Mapping)
	kvs := r.Task.Kvs
	if len(kvs) == 0 {
		// Deleted meanwhile: nothing to commit into.
		n.d.EndFlight(f, nil, 0)
		ev.Type = outcomeEvent
		n.emit(ev)
		return false, nil
	}
	fresh, derr := pending.Decode(kvs[0].Value)
	if derr != nil {
		n.log.Error("decode task after a failed commit", "task", e.ID, "error", derr)
		n.d.EndFlight(f, nil, 0)
		return false, nil
	}
	freshRev := kvs[0].ModRevision
	if !sameRun(fresh.Running, p.Marker) {
		if c.maybeApplied && committedAs(fresh, p.Marker, res.Ended) {
			// An earlier attempt was applied although its reply was lost.
			n.d.EndFlight(f, fresh, freshRev)
			n.emitResult(ev, outcomeEvent, eventOfNext(record.NextOf(fresh)), fresh)
			return false, nil
		}
		n.log.Info("run dropped: its marker was settled by the identity's owner", "identity", st.Name,
			"task", e.ID, "run", p.RunNumber, "epoch", c.epoch, "owner", owner.Node)
		n.droppedRun(f, ev, fresh, freshRev)
		return false, nil
	}
	if oerr == nil && owner.Mapped && owner.Node == n.cfg.Name && owner.Incarnation == n.cfg.Incarnation {
		c.base, c.rev, c.epoch = fresh, freshRev, owner.Epoch
		return true, nil
	}
	ok, err := n.forwardResult(owner, st.Name, e.ID, freshRev, p.Marker, res)
	if errors.Is(err, writepath.ErrTooLarge) {
		return false, err
	}
	if err != nil {
		c.maybeApplied = true
		n.log.Warn("forward a run's result: etcd failed; retrying", "task", e.ID, "error", err)
		backoff.New(50*time.Millisecond, 50*time.Millisecond).Wait(n.life.Ctx)
		return true, nil
	}
	if !ok {
		return true, nil // the task changed: look again
	}
	n.log.Info("run result forwarded to the identity's new owner", "identity", st.Name, "task", e.ID,
		"run", p.RunNumber, "owner", owner.Node, "outcome", res.Outcome.String())
	ev.Type = outcomeEvent
	n.emit(ev)
	n.d.EndFlight(f, nil, 0)
	return false, nil
}

func (ownedScope) forwardedResult(n *Path, e *held.Entry, m *storev1.RunMarker) (*storev1.ForwardedResult, bool, error) {
	ctx, cancel := n.d.EtcdCtx(n.life.Ctx)
	defer cancel()
	return n.readForwarded(ctx, e.Ident.Name, e.ID, m)
}

// settling also deletes the result forwarded for the task, if any.
func (ownedScope) settling(n *Path, e *held.Entry, commit writepath.Txn) writepath.Txn {
	return n.writes.Shapes.DeletingForwarded(commit, e.Ident.Name, e.ID)
}

func (ownedScope) settleFailed(n *Path, e *held.Entry, snap startSnap, txn writepath.Txn, resp *clientv3.TxnResponse, err error) {
	if err == nil {
		n.conflict(e, snap.epoch, txn.Refusal(resp.Responses))
		return
	}
	n.log.Warn("settle a run marker: etcd write failed; will retry", "task", e.ID, "error", err)
	n.settleNotStarted(e, time.Second)
}

// purge deletes the task fenced on the identity's epoch and the task's
// revision.
func (ownedScope) purge(n *Path, e *held.Entry, rec *storev1.TaskRecord, rev, epoch int64) {
	st := e.Ident
	if rec == nil {
		n.d.RemovePurged(e)
		return
	}
	ctx, cancel := n.d.EtcdCtx(n.life.Ctx)
	txn := n.writes.Shapes.Purge(writepath.RunFence{Identity: st.Name, Task: e.ID, Epoch: epoch, TaskRev: rev}, rec)
	resp, err := n.writes.Writer.Commit(ctx, txn)
	cancel()
	if err != nil {
		n.settleNotStarted(e, time.Minute)
		return
	}
	if !resp.Succeeded {
		n.conflict(e, epoch, txn.Refusal(resp.Responses))
		return
	}
	n.d.Lock()
	n.d.RemoveEntryLocked(e)
	empty := st.Tasks.Len() == 0
	n.d.Unlock()
	if empty {
		n.own.Voter().Recheck(st.Name) // its idle unmapping may go ahead now
	}
}

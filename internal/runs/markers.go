package runs

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file settles run markers, of either scope, that no run in flight here
// will settle: the marker of a run whose node died or restarted, of a run
// still going on the identity's previous owner after a planned move, and of
// a start whose reply this node never saw. It is the one place where that
// is decided.
//
// Guarantees:
//   - A marker is never overwritten unresolved: a record that carries one
//     is not started again until the marker has been settled in a Txn
//     fenced on the identity's epoch and the task's revision.
//   - A planned move causes no second execution while the old owner is
//     alive: the new owner waits (up to DrainTimeout) for the result that
//     the old owner forwards, and commits that result under its own epoch.
//   - A run whose node died, restarted or lost its lease is recorded
//     INTERRUPTED and, with requests_recovery, its fire time runs again
//     with the same run number: at least once.
//   - A start that was written but whose handler was never called runs
//     again whatever requests_recovery says: nothing ran.

// resolveMarker settles the marker of rec (with the fences in snap), the
// record of e, which the dispatcher handed to start. e is running (out of
// the queue) on entry; every path puts it back or removes it.
//
// EVERY_NODE markers are this node's own progress: nothing is forwarded or
// waited for, and a marker of no run in flight here is resolved at once.
func (n *Path) resolveMarker(e *held.Entry, rec *storev1.TaskRecord, snap startSnap) {
	m := rec.Running
	n.d.Lock()
	if m.Incarnation == n.cfg.Incarnation && n.d.InFlightLocked(e.Ref()) {
		// This node's own run: it settles its marker itself, and EndFlight
		// puts the entry back.
		n.d.Queue.Remove(e)
		n.d.Unlock()
		return
	}
	waitingSince := e.Ex().AwaitSince.Time()
	n.d.Unlock()

	fr, alive, err := scopeImpl(e.Ident.Scope).forwardedResult(n, e, m)
	if err != nil {
		n.log.Warn("read a run's forwarded result: etcd failed; will retry", "task", e.ID, "error", err)
		n.settleNotStarted(e, time.Second)
		return
	}
	now := time.Now()
	var (
		res runResult
		by  = m.Node
	)
	switch {
	case fr != nil:
		res = resultOfForwarded(fr)
	case m.Incarnation != n.cfg.Incarnation && alive &&
		(waitingSince.IsZero() || now.Sub(waitingSince) < n.cfg.DrainTimeout):
		// The run may still be going on its node, which is alive (a planned
		// move): wait for the result it forwards, up to DrainTimeout.
		n.d.Lock()
		if e.Ex().AwaitSince == 0 {
			e.Extra().AwaitSince = held.InstantOf(now)
			n.log.Info("waiting for the result of a run still in flight on the identity's previous owner",
				"identity", e.Ident.Name, "task", e.ID, "run", m.RunNumber, "node", m.Node, "up_to", n.cfg.DrainTimeout)
		}
		e.Extra().RecheckAt = held.InstantOf(now.Add(n.cfg.HandoffPeriod))
		e.Running = false
		n.d.ReschedLocked(e)
		n.d.Unlock()
		return
	default:
		res = staleResult(m, n.cfg.Incarnation, alive, n.cfg.DrainTimeout, now)
	}
	n.settleMarker(e, rec, snap, res, by, fr != nil)
}

// staleResult is the outcome recorded for a marker whose run will not
// report: INTERRUPTED (its node died, restarted or never reported), or, for
// this incarnation's own marker of a run not in flight here, a start whose
// handler was never called.
func staleResult(m *storev1.RunMarker, self string, alive bool, waited time.Duration, now time.Time) runResult {
	res := runResult{
		Result: record.Result{Outcome: taskdv1.Outcome_OUTCOME_INTERRUPTED, Started: m.StartedAt.AsTime(), Ended: now},
		fence:  Fence{Epoch: m.Epoch},
		stale:  true,
	}
	switch {
	case m.Incarnation == self:
		res.NotCalled = true
		res.Message = "the run's start was written but its handler was not called"
	case alive:
		res.Message = fmt.Sprintf("node %s did not report the run's result within %s", m.Node, waited)
	default:
		res.Message = fmt.Sprintf("node %s (incarnation %s) stopped during the run", m.Node, m.Incarnation)
	}
	return res
}

// readForwarded reads, in one Txn, the result forwarded for the run of
// marker m (nil if none) and whether the run's node is still registered
// under the marker's incarnation.
func (n *Path) readForwarded(ctx context.Context, id, taskID string, m *storev1.RunMarker) (*storev1.ForwardedResult, bool, error) {
	resp, err := n.writes.Writer.Read(ctx,
		clientv3.OpGet(n.keys.Result(id, taskID)),
		clientv3.OpGet(n.keys.Node(m.Node)),
	)
	if err != nil {
		return nil, false, err
	}
	var fr *storev1.ForwardedResult
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		fr = &storev1.ForwardedResult{}
		if err := proto.Unmarshal(kvs[0].Value, fr); err != nil || fr.RunNumber != m.RunNumber ||
			fr.Incarnation != m.Incarnation {
			fr = nil // another run's, or unreadable: the settling Txn deletes it
		}
	}
	alive := false
	if kvs := resp.Responses[1].GetResponseRange().GetKvs(); len(kvs) > 0 {
		var rec storev1.NodeRecord
		if proto.Unmarshal(kvs[0].Value, &rec) == nil {
			alive = rec.Incarnation == m.Incarnation && rec.State != taskdv1.NodeState_NODE_STATE_STOPPED
		}
	}
	return fr, alive, nil
}

// settleMarker commits res as the outcome of rec's marker, run by node by,
// in one Txn fenced as the task's scope requires (resultWrite) that also
// deletes a forwarded result. If it fails the marker stays, and the entry's
// next start comes back here.
func (n *Path) settleMarker(e *held.Entry, rec *storev1.TaskRecord, snap startSnap, res runResult, by string, forwarded bool) {
	st := e.Ident
	m := rec.Running
	out := record.Clone(rec)
	var hist *taskdv1.Run
	var next EventType
	if res.stale {
		hist = resolveStale(out, res)
	} else {
		hist, next = applyResult(out, m, res, by, jitter())
	}
	n.d.Lock()
	c := &commitState{epoch: snap.epoch, rev: snap.rev, progRev: snap.progRev, served: snap.served, shared: e.Ex().Shared}
	n.d.Unlock()
	w, err := n.resultWrite(e, c, out, hist)
	if err != nil {
		n.log.Error("settle a run marker: encode", "task", e.ID, "error", err)
		n.settleNotStarted(e, time.Minute)
		return
	}
	txn := scopeImpl(st.Scope).settling(n, e, w.txn)
	ctx, cancel := n.d.EtcdCtx(n.life.Ctx)
	resp, err := n.writes.Writer.Commit(ctx, txn)
	cancel()
	if err != nil || !resp.Succeeded {
		// The marker stays: the entry's next start comes back here.
		scopeImpl(st.Scope).settleFailed(n, e, snap, txn, resp, err)
		return
	}
	ev := Event{Identity: st.Name, TaskID: e.ID, Kind: rec.Spec.GetKind(), RunNumber: m.RunNumber,
		Attempt: int(m.Attempt), Outcome: hist.Outcome, Message: res.Message, Fence: res.fence}
	if forwarded {
		n.log.Info("committed a run's result forwarded by the identity's previous owner", "identity", st.Name,
			"task", e.ID, "run", m.RunNumber, "node", by, "outcome", res.Outcome.String())
		ev.Type = next
		n.emitNext(ev, out)
	} else {
		n.log.Info("resolved a run left in flight", "identity", st.Name, "task", e.ID,
			"run", m.RunNumber, "node", m.Node, "outcome", hist.Outcome.String())
		ev.Type = EventInterrupted
		n.emit(ev)
	}
	rev := resp.Header.Revision
	committed := w.committed(rev)
	n.d.Lock()
	if committed != nil {
		e.Rec, e.Raw, e.Rev = committed, "", rev
	}
	e.Running = false
	n.d.ReschedLocked(e)
	n.d.Unlock()
}

// forwardResult stores the result of this node's run of a task whose
// identity moved away while the run was in flight, for the new owner to
// commit; ok is false when the task changed (the marker may be gone). The
// Txn holds only while the task is at rev, that is while this run's marker
// still stands, and it writes the new owner a handoff entry for the task
// so that it looks at once.
func (n *Path) forwardResult(owner identity.Owner, id, taskID string, rev int64, m *storev1.RunMarker, res runResult) (bool, error) {
	var extra []clientv3.Op
	if owner.Mapped && owner.Node != n.cfg.Name {
		op, err := n.writes.Shapes.Handoff(owner.Node, id, taskID)
		if err != nil {
			return false, err
		}
		extra = append(extra, op)
	}
	txn, err := n.writes.Shapes.Forward(id, taskID, rev, forwardedOf(m, n.cfg.Name, n.cfg.Incarnation, res), extra...)
	if err != nil {
		return false, err
	}
	ctx, cancel := n.d.EtcdCtx(context.WithoutCancel(n.life.Ctx))
	defer cancel()
	resp, err := n.writes.Writer.Commit(ctx, txn)
	if err != nil {
		return false, writepath.Ambiguous(err)
	}
	return resp.Succeeded, nil
}

// forwardedOf is the forwarded result of res, the outcome of the run of
// marker m on node (incarnation inc): what resultOfForwarded reads back.
func forwardedOf(m *storev1.RunMarker, node, inc string, res runResult) *storev1.ForwardedResult {
	fr := &storev1.ForwardedResult{
		RunNumber: m.RunNumber, Node: node, Incarnation: inc,
		Outcome: res.Outcome, Message: res.Message, Data: res.Data, DataSet: res.DataSet,
		StartedAt: ts(res.Started), EndedAt: ts(res.Ended),
		FenceEpoch: res.fence.Epoch, FenceRevision: res.fence.Revision, Recovery: res.Recovery,
		Retry: res.Retry, Cancel: res.Cancel, Again: res.Again, NotCalled: res.NotCalled,
	}
	if !res.Snooze.IsZero() {
		fr.Snooze = ts(res.Snooze)
	}
	if !res.RetryAt.IsZero() {
		fr.RetryAt = ts(res.RetryAt)
	}
	return fr
}

// resultOfForwarded is the run result a forwarded result carries.
func resultOfForwarded(fr *storev1.ForwardedResult) runResult {
	res := runResult{
		Result: record.Result{Outcome: fr.Outcome, Message: fr.Message, Data: fr.Data, DataSet: fr.DataSet,
			Started: fr.StartedAt.AsTime(), Ended: fr.EndedAt.AsTime(),
			Recovery: fr.Recovery, Retry: fr.Retry, Cancel: fr.Cancel, Again: fr.Again, NotCalled: fr.NotCalled},
		fence: Fence{Epoch: fr.FenceEpoch, Revision: fr.FenceRevision},
	}
	if fr.Snooze != nil {
		res.Snooze = fr.Snooze.AsTime()
	}
	if fr.RetryAt != nil {
		res.RetryAt = fr.RetryAt.AsTime()
	}
	return res
}

// sameRun reports whether marker a is the marker b (the same run).
func sameRun(a, b *storev1.RunMarker) bool {
	return a != nil && b != nil && a.RunNumber == b.RunNumber && a.Incarnation == b.Incarnation && a.Node == b.Node
}

// committedAs reports whether rec's last run is the run of marker m ended at
// ended: a commit whose reply was lost was applied after all.
func committedAs(rec *storev1.TaskRecord, m *storev1.RunMarker, ended time.Time) bool {
	lr := rec.GetLastRun()
	return rec.Running == nil && lr != nil && lr.RunNumber == m.RunNumber && lr.GetEndedAt().AsTime().Equal(ended)
}

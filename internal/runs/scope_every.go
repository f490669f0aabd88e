package runs

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// everyScope is the scope of EVERY_NODE tasks: stored once, run on every
// node; this node writes only its own progress, fenced on its
// registration, the shared record's revision and the progress revision.
type everyScope struct{}

func (everyScope) ownsRecord() bool { return false }

func (everyScope) snapLocked(e *held.Entry, s *startSnap) {
	s.progRev, s.served = e.Ex().ProgRev, e.Ex().Prog.GetManualServedRev()
	s.manualIn = e.Rec != nil && e.Rec.ManualRequested
}

// writeStart writes this node's progress key, fenced on the node's
// registration, the shared record's revision and the progress revision.
func (everyScope) writeStart(n *Path, e *held.Entry, p startPlan, snap startSnap) (int64, func(), bool) {
	st := e.Ident
	served := snap.served
	if snap.manualIn && !p.Rec.ManualRequested {
		served = snap.rev
	}
	np := record.SplitEvery(p.Rec, served)
	kind := p.Rec.GetSpec().GetKind()
	txn, err := n.writes.Shapes.EveryStart(n.everyFence(e, snap.rev, snap.progRev), writepath.Pauses{Identity: st.Name, Kind: kind}, np)
	if err != nil {
		n.log.Error("encode EVERY_NODE progress", "task", e.ID, "error", err)
		n.settleNotStarted(e, time.Second)
		return 0, nil, false
	}
	ctx, cancel := n.startCtx()
	resp, err := n.writes.Writer.Commit(ctx, txn)
	cancel()
	if err == nil && !resp.Succeeded {
		if r := txn.Refusal(resp.Responses); n.followers.pauses.LearnRefusal(st.Name, kind, r.PauseIdentity, r.PauseKind) {
			n.putBack(e) // parks it: the pause is known now
			return 0, nil, false
		}
	}
	if err != nil || !resp.Succeeded {
		if err != nil {
			n.log.Warn("start EVERY_NODE run: etcd write failed; will retry", "task", e.ID, "error", err)
		}
		// The task changed (its watch brings it), this node registered
		// again, or the write's outcome is unknown: read the progress
		// again, so that a marker written after all is resolved.
		n.settleNotStarted(e, n.cfg.HandoffPeriod)
		n.d.Spawn(func() { n.followers.every.Reload(n.life.Ctx, e.Ident.Name, e.ID) })
		return 0, nil, false
	}
	rev := resp.Header.Revision
	return rev, func() { e.Rec, e.Extra().Prog, e.X.ProgRev = p.Rec, np, rev }, true
}

func (everyScope) beginCommit(n *Path, e *held.Entry, _ *held.Flight, p startPlan, _ runResult, _ Event, _ EventType, epoch, rev int64) *commitState {
	c := &commitState{base: p.Rec, epoch: epoch, rev: rev}
	n.d.Lock()
	c.rev, c.progRev, c.served, c.shared = e.Rev, rev, e.Ex().Prog.GetManualServedRev(), e.Ex().Shared
	n.d.Unlock()
	return c
}

// resultWrite is this node's progress and history, fenced on the node's
// registration, the shared record's revision and the progress revision;
// Else reads the shared record.
func (everyScope) resultWrite(n *Path, e *held.Entry, c *commitState, rec *storev1.TaskRecord, hist *taskdv1.Run) (resultTxn, error) {
	np := record.SplitEvery(rec, c.served)
	txn, err := n.writes.Shapes.EveryCommit(n.everyFence(e, c.rev, c.progRev), np, hist, n.cfg.History)
	if err != nil {
		return resultTxn{}, err
	}
	shared, sharedRev := c.shared, c.rev
	return resultTxn{
		txn: txn,
		committed: func(rev int64) *storev1.TaskRecord {
			// The entry's record merges the shared record with this
			// node's progress; its rev stays the shared record's.
			n.d.Lock()
			e.Extra().Prog, e.X.ProgRev = np, rev
			e.Rec = record.MergeEvery(shared, sharedRev, np, time.Now(), n.followers.cals.Exclusions(shared.GetSpec().GetCalendars()))
			n.d.Unlock()
			return nil
		},
	}, nil
}

// commitConflict: a deleted task, or a changed registration (the node
// lost its lease), drops the result (the marker stays and the next start
// resolves it); a changed shared record (cancel, run-now) is folded in.
func (everyScope) commitConflict(n *Path, e *held.Entry, f *held.Flight, c *commitState, _ startPlan, _ runResult,
	r writepath.Refusal, ev Event, _ EventType) (bool, error) {
	kvs := r.Shared.Kvs
	if len(kvs) == 0 || kvs[0].ModRevision == c.rev {
		n.droppedRun(f, ev, nil, 0)
		return false, nil
	}
	fresh, err := pending.Decode(kvs[0].Value)
	if err != nil {
		n.log.Error("decode EVERY_NODE task after a failed commit", "task", e.ID, "error", err)
		n.droppedRun(f, ev, nil, 0)
		return false, nil
	}
	c.shared, c.rev = fresh, kvs[0].ModRevision
	n.d.Lock()
	e.Extra().Shared, e.Rev = fresh, c.rev
	n.d.Unlock()
	c.base = record.MergeEvery(fresh, c.rev, record.SplitEvery(c.base, c.served), time.Now(), n.followers.cals.Exclusions(fresh.GetSpec().GetCalendars()))
	return true, nil
}

// forwardedResult: no node forwards an EVERY_NODE task's result.
func (everyScope) forwardedResult(*Path, *held.Entry, *storev1.RunMarker) (*storev1.ForwardedResult, bool, error) {
	return nil, false, nil
}

func (everyScope) settling(_ *Path, _ *held.Entry, commit writepath.Txn) writepath.Txn {
	return commit
}

// settleFailed reads the progress again, so that a marker written after
// all is resolved.
func (everyScope) settleFailed(n *Path, e *held.Entry, _ startSnap, _ writepath.Txn, _ *clientv3.TxnResponse, err error) {
	if err != nil {
		n.log.Warn("settle a run marker: etcd write failed; will retry", "task", e.ID, "error", err)
	}
	n.settleNotStarted(e, time.Second)
	n.d.Spawn(func() { n.followers.every.Reload(n.life.Ctx, e.Ident.Name, e.ID) })
}

func (everyScope) purge(n *Path, e *held.Entry, _ *storev1.TaskRecord, _, _ int64) {
	n.d.RemovePurged(e)
}

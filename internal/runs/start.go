package runs

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
)

// This file writes a run's start: the fenced start Txn of a due entry
// (start, writeStart), the launch of its handler once the start is
// committed (launcher), and what becomes of an entry whose start did not
// happen (putBack, settleNotStarted, conflict). The timer queue and the
// starters that call it are dispatch.go's.

// startCtx bounds the start write of a run by the node's lease margin: a
// start that etcd applies after the node could last prove its lease live
// is never followed by a handler call (the run is resolved instead).
func (n *Path) startCtx() (context.Context, context.CancelFunc) {
	return n.startCtxFrom(n.life.Ctx)
}

// startCtxFrom is startCtx under parent. The start of a run armed ahead of
// its fire time is not cancelled when the node stops: Stop waits for it,
// and then undoes it (internal/dispatch/arming.go), where a start cut short might have been
// applied and be left for the task's next owner to resolve as interrupted.
func (n *Path) startCtxFrom(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, n.member.Deadline())
}

// start writes the run marker of a due entry of any scope (fenced as its
// scope requires) and returns the function that launches its run (which
// then holds the slot), or nil. The rules every start keeps, whatever the
// scope: nothing starts while the node drains, its lease is not proven, or
// the identity is leaving; a record that still carries a run marker is never
// started over (the marker is resolved first); a run never starts before its
// fire time; one task has at most one run in flight on this node.
//
// With ahead > 0 the start is written up to ahead before the fire time
// and planned as of the fire time: the run is armed (internal/dispatch/arming.go) and
// returned as such, its handler called when it fires.
func (n *Path) start(e *held.Entry, ahead time.Duration) (func(), *held.Armed) {
	n.d.Lock()
	st := e.Ident
	if e.Gone || st.Lost || st.Leaving || n.d.Phase.Draining || !n.member.Fresh() {
		e.Running = false
		n.d.ReschedLocked(e)
		n.d.Unlock()
		return nil, nil
	}
	cur, snap := e.Record(), n.snapLocked(e)
	now := time.Now()
	var tm record.Timing
	if cur != nil {
		tm = n.d.EntryTimingLocked(e, cur, now)
	}
	if cur == nil {
		e.Running = false
		n.d.ReschedLocked(e)
		n.d.Unlock()
		return nil, nil
	}
	if cur.Running != nil {
		n.d.Unlock()
		n.resolveMarker(e, cur, snap)
		return nil, nil
	}
	at, purge, ok := record.Due(cur, n.cfg.Retention, tm)
	if !ok || purge || at.After(now.Add(ahead)) || n.d.PausedByLocked(cur, st.Name) != nil {
		e.Running = false
		e.ReadyAt = 0
		n.d.ReschedLocked(e) // (parks a paused entry)
		n.d.Unlock()
		return nil, nil
	}
	if at.After(now) {
		tm = n.d.EntryTimingLocked(e, cur, at) // armed: planned as of its fire time
	}
	if st.Scope.Owned() && snap.epoch < snap.regRev {
		// Owned under an epoch from before this node's current registration
		// (loaded while it registered again): re-mapped first, then run.
		n.d.Unlock()
		n.settleNotStarted(e, n.cfg.HandoffPeriod)
		n.own.Repair(st.Name)
		return nil, nil
	}
	f, ok := n.d.BeginFlightLocked(e.Ref())
	if !ok {
		// This node's earlier run of the task is still in flight (its
		// identity left and came back meanwhile): the entry waits for that
		// run to settle (EndFlight queues it again).
		n.d.Queue.Remove(e)
		n.d.Unlock()
		return nil, nil
	}
	// The run's flight carries its kind's token (internal/dispatch/limits.go) and its remote
	// worker's slot (internal/dispatch/workerwait.go) from here on.
	if e.X != nil {
		f.Token, e.X.Token = e.X.Token, nil
		f.Reserved = e.X.WW.Take()
	}
	ready := e.ReadyAt.Time()
	reserved := f.Reserved
	n.d.Unlock()
	if reserved != nil && !reserved.Live() {
		// The worker went away since it was reserved: the run is put back,
		// due, not started for nobody.
		n.abortFlight(f, e)
		n.putBack(e)
		return nil, nil
	}

	p := startPlan{Start: record.PlanStart(cur, n.cfg.Name, n.cfg.Incarnation, snap.epoch, tm)}
	p.ready = ready
	if ahead > 0 {
		p.before = cur // an armed run not called is undone (internal/dispatch/arming.go)
	}
	rev, record, ok := n.writeStart(e, p, snap)
	if !ok {
		n.abortFlight(f, e)
		return nil, nil
	}
	launch := n.launcher(e, f, p, snap.epoch, rev)
	n.d.Lock()
	record()
	e.ReadyAt = 0
	var a *held.Armed
	switch {
	case !p.Runs:
		e.Running = false
		n.d.ReschedLocked(e)
	case ahead > 0:
		a = &held.Armed{E: e, Flight: f, Rec: p.Rec, Epoch: snap.epoch, Rev: rev, Lease: snap.lease, At: at, Launch: launch}
		n.d.RegisterArmedLocked(a)
	default:
		n.armOverlapLocked(e, p.Rec, rev, time.Time{})
	}
	n.d.Unlock()
	if !p.Runs {
		n.abortFlight(f, e)
	}
	return launch, a
}

// startSnap is what a start reads of its entry under n.mu: the fences of
// its write.
type startSnap struct {
	lease    clientv3.LeaseID // the node's registration lease when the start was planned
	regRev   int64            // that registration's revision: an owned epoch older than it is not used
	epoch    int64            // the identity's epoch (0 for EVERY_NODE and non-durable tasks)
	rev      int64            // the task record's revision (EVERY_NODE: the shared record's)
	progRev  int64            // EVERY_NODE: this node's progress revision
	served   int64            // EVERY_NODE: the run-now request this node served last
	manualIn bool             // EVERY_NODE: a run-now request is pending in the record
}

func (n *Path) snapLocked(e *held.Entry) startSnap {
	lease, registered := n.member.Registration()
	s := startSnap{rev: e.Rev, lease: lease, regRev: registered}
	scopeImpl(e.Ident.Scope).snapLocked(e, &s)
	return s
}

// writeStart writes the run marker of plan p for e, fenced as e's scope
// requires, and returns the revision the run's fence carries and a
// function that records the written state in e (called under n.mu). ok is
// false when nothing started: e was put back in the queue or handed to the
// conflict path. Every write is bounded by the lease margin (startCtx).
//
//   - IDENTITY: the task key, fenced on the identity's epoch and the task's
//     revision, through the batcher.
//   - EVERY_NODE: this node's progress key, fenced on the node's
//     registration, the shared record's revision and the progress revision.
//   - non-durable: nothing is written.
func (n *Path) writeStart(e *held.Entry, p startPlan, snap startSnap) (int64, func(), bool) {
	return scopeImpl(e.Ident.Scope).writeStart(n, e, p, snap)
}

// abortFlight takes a run of e that did not start out of the registry. e
// itself is put back by the caller; the task's current entry, if it is
// another one waiting for this flight (the identity was loaded again while
// the start was being written), is put back here, or it would wait forever.
func (n *Path) abortFlight(f *held.Flight, e *held.Entry) {
	n.d.Lock()
	defer n.d.Unlock()
	f.Cancel(nil)
	n.d.ReleaseTokenLocked(&f.Token)
	n.d.ReleaseFlightReservationLocked(f)
	n.d.Flights.End(f)
	if cur := n.d.EntryLocked(f.Ref); cur != nil && cur != e && cur.Running {
		cur.Running = false
		n.d.ReschedLocked(cur)
	}
}

// launcher reports a started run's misfires and returns the function that
// calls its handler (FIRED, STARTED, then the call), or nil if the plan
// runs nothing. It is called from a goroutine Stop waits for, and counts
// the run for Stop from here on.
func (n *Path) launcher(e *held.Entry, f *held.Flight, p startPlan, epoch, rev int64) func() {
	ev := Event{Identity: e.Ident.Name, TaskID: e.ID, Kind: p.Rec.Spec.Kind}
	if p.Misfired > 0 {
		ev.Type, ev.Count = EventMisfired, p.Misfired
		n.emit(ev)
	}
	if !p.Runs {
		return nil
	}
	ev.RunNumber, ev.Attempt, ev.Fence, ev.Count = p.RunNumber, p.Attempt, Fence{Epoch: epoch, Revision: rev}, 0
	ev.FireTime, ev.Ready = p.Fire, p.ready
	n.life.Runs.Add(1)
	return func() {
		if p.before == nil || f.Ctx.Err() == nil { // an armed run not called never fired
			ev.Type = EventFired
			n.emit(ev)
		}
		entered := make(chan struct{})
		// execute emits VETOED or STARTED; the identity's next run is
		// called after this one entered its handler.
		go n.execute(e, f, p, ev, entered)
		<-entered
	}
}

// putBack puts back an entry that did not start, at its due time (or
// parked, if paused).
func (n *Path) putBack(e *held.Entry) {
	n.d.Lock()
	defer n.d.Unlock()
	e.Running = false
	n.d.ReschedLocked(e)
}

// settleNotStarted puts back an entry whose start failed, to try again later.
func (n *Path) settleNotStarted(e *held.Entry, after time.Duration) {
	n.d.Lock()
	defer n.d.Unlock()
	defer n.d.TouchLocked(e)
	e.Running = false
	if e.Gone || e.Ident.Lost {
		return
	}
	n.d.Queue.Set(e, time.Now().Add(after))
	n.d.Kick()
}

// conflict handles a fenced write that failed: either the identity's epoch
// moved (the identity left this node, or was re-mapped to it) or the task
// changed under us (cancelled, run-now, deleted, or a marker written by a
// start whose reply was lost). A marker found there is resolved by the
// entry's next start.
func (n *Path) conflict(e *held.Entry, epoch int64, r writepath.Refusal) {
	st := e.Ident
	if r.Registration != nil && !n.member.Owns(r.Registration) {
		// This node's registration is gone or another's (its lease ended):
		// nothing starts until the lease keeper has registered it again.
		n.log.Warn("start refused: this node's registration is no longer under its lease", "identity", st.Name, "task", e.ID)
		n.settleNotStarted(e, n.cfg.LeaseTTL/4)
		n.member.Check()
		return
	}
	owner, err := identity.OwnerFromResponse(st.Name, r.Mapping)
	if err != nil {
		n.log.Error("decode mapping after a failed write", "identity", st.Name, "error", err)
	}
	if err != nil || owner.Epoch != epoch {
		n.d.Lock()
		e.Running = false
		n.d.Unlock()
		n.d.IdentityMoved(st, owner)
		return
	}
	kvs := r.Task.Kvs
	n.d.Lock()
	defer n.d.Unlock()
	e.Running = false
	if len(kvs) == 0 {
		n.d.RemoveEntryLocked(e)
		return
	}
	rec, err := pending.Decode(kvs[0].Value)
	if err != nil {
		n.log.Error("decode task after a failed write", "task", e.ID, "error", err)
		n.d.Queue.Set(e, time.Now().Add(time.Second))
		return
	}
	e.Rec, e.Raw, e.Rev = rec, "", kvs[0].ModRevision
	n.d.ReschedLocked(e)
}

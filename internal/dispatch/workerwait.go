package dispatch

import (
	"context"
	"time"

	"github.com/taskd/taskd/internal/admission"
	"github.com/taskd/taskd/internal/held"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file is the node's side of the wait for a remote worker
// (Config.Remote): the worker queues, their order and the reserved slots
// are internal/admission's Workers.
//
// A due run of a kind that only remote workers serve (no handler in
// Config.Handlers) needs a worker with a free slot. Its identity's starter
// asks the Remote for one (Reserve) when it takes the entry off the start
// queue, after the kind's limit token (limits.go) and before the run slot
// and the start write, as a kind limit's token is taken. An entry that
// finds no free worker does not hold its starter, a run slot, or its
// identity's other kinds, and nothing is written for it: no attempt is
// used, no run number taken. It waits in its kind's worker queue, still
// due (counted in Stats.Due and Stats.WaitingForWorker, shown by GetTask
// as waiting for a worker since when it began), its fire time and misfire
// handling unchanged: its start computes them when it comes.
//
// The worker queue of a kind is ordered as the timer queue is: by when the
// entry fell due (readyAt), then priority, then task id. When the Remote
// signals a freed slot or a new worker (Freed), the worker-wait loop hands
// the free slots to the heads of the queues in that order, across kinds;
// an entry given one goes to its identity's grant queue and starts like
// any other (the lease is checked at its start write and again right
// before the call). While entries of a kind wait, a later entry of that
// kind waits behind them, so the runs of one kind of one identity start in
// order (contract §2.6); its other kinds do not wait.
//
// The reservation goes with the run's flight at its start. A reserved
// worker that went away before the start write is found then (Live): the
// run is put back, not started. One that goes away after the start is a
// worker gone mid-run: a failed attempt, as before. A reservation not used
// (the start ran nothing, the identity left, the node stops) is given back.
//
// No new buffer: a worker queue holds entries the node holds anyway (one
// per task, at most once each).

// WaitingForWorker is taskdv1.Task.waiting for a due run that waits for a
// remote worker with a free slot.
const WaitingForWorker = "worker"

// workerWait is the worker queues and the episodes of kinds nothing serves
// (unserved.go); an entry's wait for a worker, or the worker slot it holds
// until its start, is its held.WorkerHold (out of line, in held.Extra).
// The slots are held.Slots: each is a Reservation of Config.Remote
// (remoteSlots), which the run's call takes back as one (TakeReservation).
type workerWait = admission.Workers[*held.Entry, held.Slot]

// workerKindLocked is the kind of due entry e if its run needs a remote
// worker, or "": purges and overlap shadows (whose overlapping run is a
// task of its own) need none, nor a kind with a handler here, nor a record
// that carries a run marker: its start settles the marker (internal/runs/markers.go)
// and calls no handler, and a marker left waiting for a worker would keep
// the task RUNNING, for nothing, until one came. n.mu held.
func (n *Dispatcher) workerKindLocked(e *held.Entry) string {
	if n.cfg.Remote == nil || e.Purge || e.Ex().OverlapOf != nil {
		return ""
	}
	rec := e.Record()
	if e.Rec == nil && rec != nil {
		// Decoded once: its start, which comes next, reads it again.
		e.Rec, e.Raw = rec, ""
	}
	kind := rec.GetSpec().GetKind()
	if n.cfg.HasHandler(kind) || rec.GetRunning() != nil {
		return ""
	}
	return kind
}

// admitWorkerLocked lets e go on to its run slot and start if it needs no
// worker or holds a worker's slot, reserving one if it is free and no
// earlier entry of its kind waits; otherwise e joins its kind's worker
// queue and false is returned. n.mu held.
func (n *Dispatcher) admitWorkerLocked(e *held.Entry) bool {
	if e.X != nil && e.X.WW.Reserved() {
		return true
	}
	kind := n.workerKindLocked(e)
	if kind == "" {
		return true
	}
	return n.Admit.workers.Admit(e.Hold(), e, kind, held.DueKey(e), n.Log)
}

// grantWorkersLocked hands the free worker slots to the waiting entries
// (earliest first, across kinds): each goes to its identity's grant queue.
// n.mu held.
func (n *Dispatcher) grantWorkersLocked() {
	n.Admit.workers.Grant(n.Log, func(e *held.Entry) {
		st := e.Ident
		r := st.Activate()
		r.GrantQ = append(r.GrantQ, e)
		n.ensureStarterLocked(st)
	})
}

// dropWorkerWaitLocked takes e out of its worker queue, if it waits in
// one, and gives back the kind's token it may hold (it waits for a worker
// after it got its token): e is gone, or its identity left. n.mu held.
func (n *Dispatcher) dropWorkerWaitLocked(e *held.Entry) {
	if e.X != nil && n.Admit.workers.Drop(e.X.WW, n.Log) {
		n.releaseEntryHoldsLocked(e)
	}
}

// UnwaitLocked takes e out of its worker queue, if it waits in one, and
// makes it an idle entry again: a change to its task (a cancel, an update,
// a task pause, a reload), or a pause of its identity or kind, then
// applies to it as to any entry not started, and it is admitted again if
// it is still due. Without this a waiting entry kept its old record until
// a worker came, and a cancelled or paused task went on counting as
// waiting. n.mu held.
func (n *Dispatcher) UnwaitLocked(e *held.Entry) bool {
	if e.X == nil || !e.X.WW.Waiting() {
		return false
	}
	n.dropWorkerWaitLocked(e)
	e.Running = false
	return true
}

// parkPausedWaitsLocked takes the waiting entries that a pause now holds
// out of the worker queues: they are parked like any paused entry, and no
// longer count as waiting for a worker. n.mu held.
func (n *Dispatcher) parkPausedWaitsLocked() {
	var paused []*held.Entry
	for e := range n.Admit.workers.All() {
		if n.PausedByLocked(e.Record(), e.Ident.Name) != nil {
			paused = append(paused, e)
		}
	}
	for _, e := range paused {
		if n.UnwaitLocked(e) {
			n.ReschedLocked(e) // parks it
		}
	}
}

// releaseReservationLocked gives back the worker slot e holds, if any.
// n.mu held.
func (n *Dispatcher) releaseReservationLocked(e *held.Entry) {
	if e.X != nil {
		e.X.WW.Release()
	}
}

// ReleaseFlightReservation gives back the worker slot of a run that was
// not handed to it (its handler was not called, or it was vetoed).
func (n *Dispatcher) ReleaseFlightReservation(f *held.Flight) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ReleaseFlightReservationLocked(f)
}

func (n *Dispatcher) ReleaseFlightReservationLocked(f *held.Flight) {
	if f.Reserved != nil {
		f.Reserved.Release()
		f.Reserved = nil
	}
}

// TakeReservation hands the run's reserved worker slot to its call; nil if
// it holds none.
func (n *Dispatcher) TakeReservation(f *held.Flight) held.Slot {
	n.mu.Lock()
	defer n.mu.Unlock()
	res := f.Reserved
	f.Reserved = nil
	return res
}

// forgetWorkerWaitsLocked takes a lost identity's entries out of the worker
// queues. n.mu held.
func (n *Dispatcher) forgetWorkerWaitsLocked(st *held.Ident) {
	if !n.Admit.workers.Any() {
		return
	}
	for e := range st.Tasks.All() {
		n.dropWorkerWaitLocked(e)
	}
}

// ReleaseQueuedReservations gives back, at Stop (the starters are gone),
// the worker slots of entries left in start queues.
func (n *Dispatcher) ReleaseQueuedReservations() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.eachQueuedLocked(n.releaseReservationLocked)
}

// eachQueuedLocked calls f for each entry taken off the timer queue, due,
// and waiting in an identity's start queues (its grant queue included).
func (n *Dispatcher) eachQueuedLocked(f func(*held.Entry)) {
	for _, k := range held.Scopes {
		for _, st := range n.TableOf(k) {
			if st.Active == nil {
				continue
			}
			for _, q := range [][]*held.Entry{st.Active.StartQ, st.Active.GrantQ} {
				for _, e := range q {
					f(e)
				}
			}
		}
	}
}

// WorkerWaitLoop hands freed worker slots to the waiting entries.
func (n *Dispatcher) WorkerWaitLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.cfg.Remote.Freed():
		}
		n.mu.Lock()
		n.grantWorkersLocked()
		n.mu.Unlock()
	}
}

// WaitingForWorkerLocked counts the entries waiting for a worker, by kind:
// the kinds with waiting entries and those the connected workers serve
// (0 if none waits). n.mu held.
func (n *Dispatcher) WaitingForWorkerLocked() map[string]int {
	return n.Admit.workers.Waiting(n.cfg.HasHandler)
}

// WorkerWaitOfLocked returns since when the node's entry of rec waits for
// a worker, and why (admission.Workers.Reason); ok is false if it does not (or
// the node holds no such entry). n.mu held.
func (n *Dispatcher) WorkerWaitOfLocked(rec *storev1.TaskRecord) (since time.Time, reason string, ok bool) {
	e := n.TableOf(held.ScopeOf(rec))[rec.GetSpec().GetIdentity()].Task(rec.GetId())
	if e == nil || e.X == nil || !e.X.WW.Waiting() {
		return time.Time{}, "", false
	}
	h := e.X.WW
	since = h.Since()
	return since, n.Admit.workers.Reason(h.Kind(), since), true
}

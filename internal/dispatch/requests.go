package dispatch

import (
	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/taskapi"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file is the changes the requests (internal/taskapi) make to the
// dispatcher's entries, and what they ask of it (pkg/taskservice wires them
// as taskapi.Engine). Each takes the engine lock.

// OwnedEpoch is the epoch under which this node holds id.
func (n *Dispatcher) OwnedEpoch(id string) (int64, bool) {
	n.Lock()
	defer n.Unlock()
	if st := n.Idents[id]; st != nil && !st.Lost && st.Epoch > 0 {
		return st.Epoch, true
	}
	return 0, false
}

// AddLocal queues a non-durable task.
func (n *Dispatcher) AddLocal(r *storev1.TaskRecord) {
	n.Lock()
	defer n.Unlock()
	id := r.Spec.Identity
	st := n.Local[id]
	if st == nil {
		st = &held.Ident{Name: id, Scope: held.ScopeLocal}
		n.Local[id] = st
	}
	e := &held.Entry{Ident: st, ID: r.Id, Rec: r, Idx: -1}
	st.Tasks.Put(e)
	n.ReschedLocked(e)
}

// Knows says whether identity id is in the node's table.
func (n *Dispatcher) Knows(id string) bool {
	n.Lock()
	defer n.Unlock()
	return n.Idents[id] != nil
}

// LocalTask returns a copy of a non-durable task held by this node.
func (n *Dispatcher) LocalTask(id, taskID string) (*storev1.TaskRecord, bool) {
	n.Lock()
	defer n.Unlock()
	if e := n.Local[id].Task(taskID); e != nil {
		return record.Clone(e.Rec), true
	}
	return nil, false
}

// LocalChanged puts a changed non-durable task in place; a run in flight
// takes only its state and run-now request (its commit settles the rest).
func (n *Dispatcher) LocalChanged(id, taskID string, rec *storev1.TaskRecord) {
	n.Lock()
	defer n.Unlock()
	// (The identity may have left since LocalTask: task is nil-safe.)
	switch e := n.Local[id].Task(taskID); {
	case e == nil:
	case !e.Running:
		e.Rec = rec
		n.ReschedLocked(e)
	default:
		e.Rec.State, e.Rec.ManualRequested = rec.State, rec.ManualRequested
	}
}

// StoredChanged puts a stored change in place if this node holds the task
// at the revision the change was made over.
func (n *Dispatcher) StoredChanged(id, taskID string, readRev int64, rec *storev1.TaskRecord, rev int64) bool {
	n.Lock()
	defer n.Unlock()
	st := n.Idents[id]
	if st == nil || st.Lost {
		return false
	}
	e := st.Tasks.Get(taskID)
	if e == nil {
		return false
	}
	waited := n.UnwaitLocked(e) // a run waiting for a worker takes the change now
	switch {
	case e.Running:
		n.TaskChangedLocked(e) // an armed run is not called
		return true            // the run's commit folds the change in
	case e.Rev == readRev:
		e.Rec, e.Raw, e.Rev = rec, "", rev
		n.ReschedLocked(e)
		return true
	case waited:
		n.ReschedLocked(e) // queued again; the caller's repair reads it anew
	}
	return false
}

// LocalDeleted drops a deleted non-durable task.
func (n *Dispatcher) LocalDeleted(id, taskID string) {
	n.Lock()
	defer n.Unlock()
	if e := n.Local[id].Task(taskID); e != nil {
		n.RemoveEntryLocked(e)
	}
}

// StoredDeleted drops a deleted task this node holds (a run in flight
// finds it gone when it commits).
func (n *Dispatcher) StoredDeleted(id, taskID string) {
	n.Lock()
	defer n.Unlock()
	if e := n.Idents[id].Task(taskID); e != nil && !e.Running {
		n.RemoveEntryLocked(e)
	}
}

// Holds says what holds rec back on this node: the pauses in force and,
// if this node holds its entry, a wait for a worker.
func (n *Dispatcher) Holds(rec *storev1.TaskRecord) taskapi.Holds {
	n.Lock()
	defer n.Unlock()
	h := taskapi.Holds{PausedBy: n.PausedByLocked(rec, rec.GetSpec().GetIdentity())}
	if since, reason, ok := n.WorkerWaitOfLocked(rec); ok {
		h.Waiting, h.WaitingSince, h.WaitingReason = WaitingForWorker, since, reason
	}
	return h
}

// AddOwned queues newly stored tasks of an identity this node owns at
// epoch.
func (n *Dispatcher) AddOwned(id string, epoch int64, recs []*storev1.TaskRecord, rev int64) {
	if epoch < n.Member.RegisteredRev() {
		// Mapped here before the node's current registration: it is
		// re-mapped (and its tasks loaded) by a read of the identity.
		n.Own.Repair(id)
		return
	}
	n.Lock()
	defer n.Unlock()
	st := n.Idents[id]
	if st == nil || st.Lost || st.Epoch < epoch {
		if st == nil || st.Lost {
			st = &held.Ident{Name: id, Scope: held.ScopeOwned}
			n.Idents[id] = st
		}
		st.Epoch = epoch
	}
	if st.Epoch != epoch {
		return // a newer adoption will load them
	}
	for _, r := range recs {
		if st.Tasks.Get(r.Id) != nil {
			// Already loaded (a handoff or adoption that raced this
			// schedule read it from etcd): one entry per task, so that it
			// is never queued, and started, twice.
			continue
		}
		e := &held.Entry{Ident: st, ID: r.Id, Rec: r, Rev: rev, Idx: -1}
		st.Tasks.Put(e)
		n.ReschedLocked(e)
	}
}

// Self is this node as a placement target.
func (n *Dispatcher) Self() *placement.Candidate {
	n.Lock()
	defer n.Unlock()
	return &placement.Candidate{Name: n.cfg.Name, Inc: n.Incarnation, Lease: int64(n.Member.Lease()), State: n.Phase.State}
}

package taskservice

import (
	"slices"
	"time"

	"github.com/taskd/taskd/internal/dispatch"
	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/taskapi"
	"github.com/taskd/taskd/pkg/identity"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// engineSide is the node as the requests (internal/taskapi) see it
// (taskapi.Engine): what only the node that runs the tasks knows, and the
// changes to its entries a request that stored or removed a task makes.
type engineSide Node

var _ taskapi.Engine = (*engineSide)(nil)

func (s *engineSide) node() *Node { return (*Node)(s) }

// OwnedEpoch is the epoch under which this node holds id.
func (s *engineSide) OwnedEpoch(id string) (int64, bool) {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	if st := n.d.Idents[id]; st != nil && !st.Lost && st.Epoch > 0 {
		return st.Epoch, true
	}
	return 0, false
}

// AddOwned queues newly stored tasks of an identity mapped here at epoch.
func (s *engineSide) AddOwned(id string, epoch int64, recs []*storev1.TaskRecord, rev int64) {
	s.node().addOwned(id, epoch, recs, rev)
}

// AddLocal queues a non-durable task.
func (s *engineSide) AddLocal(r *storev1.TaskRecord) {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	id := r.Spec.Identity
	st := n.d.Local[id]
	if st == nil {
		st = &held.Ident{Name: id, Scope: held.ScopeLocal}
		n.d.Local[id] = st
	}
	e := &held.Entry{Ident: st, ID: r.Id, Rec: r, Idx: -1}
	st.Tasks.Put(e)
	n.d.ReschedLocked(e)
}

// Repair reads identity id again after a while (0: at once).
func (s *engineSide) Repair(id string, after time.Duration) { s.node().own.RepairAfter(id, after) }

// Knows says whether identity id is in the node's table.
func (s *engineSide) Knows(id string) bool {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	return n.d.Idents[id] != nil
}

// IdentityMoved reacts to a failed fence of a request's write.
func (s *engineSide) IdentityMoved(id string, cur identity.Owner) {
	n := s.node()
	n.d.Lock()
	st := n.d.Idents[id]
	n.d.Unlock()
	if st != nil {
		n.d.IdentityMoved(st, cur)
	}
}

// LocalTask returns a copy of a non-durable task held by this node.
func (s *engineSide) LocalTask(id, taskID string) (*storev1.TaskRecord, bool) {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	if e := n.d.Local[id].Task(taskID); e != nil {
		return record.Clone(e.Rec), true
	}
	return nil, false
}

// LocalChanged puts a changed non-durable task in place; a run in flight
// takes only its state and run-now request (its commit settles the rest).
func (s *engineSide) LocalChanged(id, taskID string, rec *storev1.TaskRecord) {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	// (The identity may have left since LocalTask: task is nil-safe.)
	switch e := n.d.Local[id].Task(taskID); {
	case e == nil:
	case !e.Running:
		e.Rec = rec
		n.d.ReschedLocked(e)
	default:
		e.Rec.State, e.Rec.ManualRequested = rec.State, rec.ManualRequested
	}
}

// StoredChanged puts a stored change in place if this node holds the task
// at the revision the change was made over.
func (s *engineSide) StoredChanged(id, taskID string, readRev int64, rec *storev1.TaskRecord, rev int64) bool {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	st := n.d.Idents[id]
	if st == nil || st.Lost {
		return false
	}
	e := st.Tasks.Get(taskID)
	if e == nil {
		return false
	}
	waited := n.d.UnwaitLocked(e) // a run waiting for a worker takes the change now
	switch {
	case e.Running:
		n.d.TaskChangedLocked(e) // an armed run is not called
		return true              // the run's commit folds the change in
	case e.Rev == readRev:
		e.Rec, e.Raw, e.Rev = rec, "", rev
		n.d.ReschedLocked(e)
		return true
	case waited:
		n.d.ReschedLocked(e) // queued again; the caller's repair reads it anew
	}
	return false
}

// LocalDeleted drops a deleted non-durable task.
func (s *engineSide) LocalDeleted(id, taskID string) {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	if e := n.d.Local[id].Task(taskID); e != nil {
		n.d.RemoveEntryLocked(e)
	}
}

// StoredDeleted drops a deleted task this node holds (a run in flight
// finds it gone when it commits).
func (s *engineSide) StoredDeleted(id, taskID string) {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	if e := n.d.Idents[id].Task(taskID); e != nil && !e.Running {
		n.d.RemoveEntryLocked(e)
	}
}

// EveryDeleted drops a deleted EVERY_NODE task and this node's progress
// on it.
func (s *engineSide) EveryDeleted(id, taskID string) { s.node().removeEvery(id, taskID) }

// Holds says what holds rec back on this node: the pauses in force and,
// if this node holds its entry, a wait for a worker.
func (s *engineSide) Holds(rec *storev1.TaskRecord) taskapi.Holds {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	h := taskapi.Holds{PausedBy: n.d.PausedByLocked(rec, rec.GetSpec().GetIdentity())}
	if since, reason, ok := n.d.WorkerWaitOfLocked(rec); ok {
		h.Waiting, h.WaitingSince, h.WaitingReason = dispatch.WaitingForWorker, since, reason
	}
	return h
}

// Self is this node as a placement target.
func (s *engineSide) Self() *placement.Candidate {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	return &placement.Candidate{Name: n.cfg.Name, Inc: n.incarnation, Lease: int64(n.member.Lease()), State: n.d.Phase.State}
}

// Kinds are the kinds this node handles.
func (s *engineSide) Kinds() []string { return s.node().Kinds() }

// ServesKind reports whether this node runs kind now: by a handler of its
// own or a connected remote worker, or will when one connects (a declared
// kind). It is asked beside the cluster's kinds, whose cache may be older
// than a worker that just connected.
func (s *engineSide) ServesKind(kind string) bool {
	n := s.node()
	return n.cfg.Handlers[kind] != nil || n.d.Declared(kind) ||
		n.cfg.Remote != nil && slices.Contains(n.cfg.Remote.Kinds(), kind)
}

// HandlesKind reports whether a handler of this node's own runs kind.
func (s *engineSide) HandlesKind(kind string) bool { return s.node().cfg.Handlers[kind] != nil }

// Announce emits the event of a change a request made.
func (s *engineSide) Announce(c taskapi.Change, id, taskID, kind string) {
	s.node().emit(Event{Type: changeEvents[c], Identity: id, TaskID: taskID, Kind: kind})
}

// changeEvents are the events of the changes a request makes.
var changeEvents = map[taskapi.Change]EventType{
	taskapi.Canceled: EventCanceled,
	taskapi.Paused:   EventPaused,
	taskapi.Resumed:  EventResumed,
	taskapi.Updated:  EventUpdated,
}

// addOwned queues newly stored tasks of an identity this node owns.
func (n *Node) addOwned(id string, epoch int64, recs []*storev1.TaskRecord, rev int64) {
	if epoch < n.member.RegisteredRev() {
		// Mapped here before the node's current registration: it is
		// re-mapped (and its tasks loaded) by a read of the identity.
		n.own.Repair(id)
		return
	}
	n.d.Lock()
	defer n.d.Unlock()
	st := n.d.Idents[id]
	if st == nil || st.Lost || st.Epoch < epoch {
		if st == nil || st.Lost {
			st = &held.Ident{Name: id, Scope: held.ScopeOwned}
			n.d.Idents[id] = st
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
		n.d.ReschedLocked(e)
	}
}

package dispatch

import (
	"time"

	"github.com/taskd/taskd/internal/follow"
	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
)

// This file keeps the dispatcher's table of EVERY_NODE tasks (contract
// §6) as follow.EveryNode reads them: each entry's record is the shared
// record merged with this node's own progress (record.MergeEvery).

// InstallEvery queues (or updates) this node's entry of an EVERY_NODE task,
// as follow.EveryNode read it (with this node's stored progress, or
// without: the entry keeps the progress it has).
func (n *Dispatcher) InstallEvery(t follow.EveryTask) {
	shared, sharedRev := t.Shared, t.Rev
	n.Lock()
	st := n.Every[t.Identity]
	if st == nil {
		st = &held.Ident{Name: t.Identity, Scope: held.ScopeEvery}
		n.Every[t.Identity] = st
	}
	e := st.Tasks.Get(shared.Id)
	if e == nil {
		e = &held.Entry{Ident: st, ID: shared.Id, Idx: -1}
		st.Tasks.Put(e)
	} else if e.Running || (!t.WithProgress && e.Rev >= sharedRev) {
		n.Unlock()
		return // a run in flight folds the change in at its commit
	}
	if t.WithProgress {
		e.Extra().Prog, e.X.ProgRev = t.Progress, t.ProgressRev
	}
	e.Rev = sharedRev
	e.Extra().Shared = shared
	e.Rec = record.MergeEvery(shared, sharedRev, e.X.Prog, time.Now(), n.Cals.Exclusions(shared.GetSpec().GetCalendars()))
	if n.InFlightLocked(e.Ref()) {
		// This node's run is in flight: its commit settles the marker.
		e.Running = true
		n.Queue.Remove(e)
	} else {
		n.ReschedLocked(e) // a marker is resolved by the entry's next start
	}
	n.Unlock()
}

// EveryNotIn returns the EVERY_NODE entries this node holds whose tasks
// are not in stored (a list of them found them gone).
func (n *Dispatcher) EveryNotIn(stored map[string]bool) []*held.Entry {
	n.mu.Lock()
	defer n.mu.Unlock()
	var gone []*held.Entry
	for _, st := range n.Every {
		for e := range st.Tasks.All() {
			if !stored[e.ID] {
				gone = append(gone, e)
			}
		}
	}
	return gone
}

// DropEvery drops this node's entry of a deleted EVERY_NODE task.
func (n *Dispatcher) DropEvery(id, taskID string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if st := n.Every[id]; st != nil {
		if e := st.Tasks.Get(taskID); e != nil {
			n.RemoveEntryLocked(e)
		}
	}
}

package dispatch

import (
	"github.com/taskd/taskd/internal/held"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file is the dispatcher's side of the node's registry of runs in
// flight (held.Flights, which keeps the guarantee: one run of a task in
// flight on the node, whichever identities it owns meanwhile).

// BeginFlightLocked registers a run of ref about to start; ok is false when
// one is already in flight. Caller holds n.mu.
func (n *Dispatcher) BeginFlightLocked(ref held.Ref) (*held.Flight, bool) {
	return n.Flights.Begin(ref, n.Life.RunCtx, n.Member)
}

// InFlightLocked reports whether a run of ref is in flight here. Caller
// holds n.mu.
func (n *Dispatcher) InFlightLocked(ref held.Ref) bool { return n.Flights.Of(ref) != nil }

// IdentityFlightsLocked counts the runs of identity id in flight. Caller
// holds n.mu.
func (n *Dispatcher) IdentityFlightsLocked(id string) int {
	c := 0
	for range n.Flights.Owned(id) {
		c++
	}
	return c
}

// identityLeftFlightsLocked tells the runs in flight of a durable identity
// that it moved away. Caller holds n.mu.
func (n *Dispatcher) identityLeftFlightsLocked(id string) {
	for f := range n.Flights.Owned(id) {
		if !f.LeftDone {
			f.LeftDone = true
			close(f.Left)
			if f.Armed != nil {
				n.disarmLocked(f.Armed, "its identity left this node")
			}
		}
	}
}

// FenceFlightsLocked cancels the handlers of every durable run in flight:
// the node can no longer prove it owns their identities. Caller holds n.mu.
func (n *Dispatcher) FenceFlightsLocked(cause error) {
	for f := range n.Flights.Owned("") {
		f.Cancel(cause)
		if f.Armed != nil {
			n.fireLocked(f.Armed) // settles now, not called
		}
	}
}

// EndFlight settles a run: it leaves the registry, and the task's current
// entry, if the node holds one (the identity may have left and come back
// meanwhile), takes rec at rev when that is newer than what it has and
// goes back in the queue. rec is nil when the run left no newer record
// known here (it was forwarded or dropped).
func (n *Dispatcher) EndFlight(f *held.Flight, rec *storev1.TaskRecord, rev int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f.Cancel(nil)
	n.Flights.End(f)
	e := n.EntryLocked(f.Ref)
	if e == nil {
		return
	}
	if rec != nil && (rev == 0 || rev >= e.Rev) {
		e.Rec, e.Raw, e.Rev = rec, "", rev
	}
	e.Running = false
	n.ReschedLocked(e)
}

// EntryLocked returns the node's current entry of ref, or nil. Caller holds
// n.mu.
func (n *Dispatcher) EntryLocked(ref held.Ref) *held.Entry {
	st := n.TableOf(ref.Scope)[ref.Identity]
	if st == nil || st.Lost {
		return nil
	}
	return st.Tasks.Get(ref.Task)
}

package taskservice

import (
	"context"
	"errors"
	"time"

	"github.com/taskd/taskd/internal/held"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file is the node's side of its registry of runs in flight
// (held.Flights, which keeps the guarantee: one run of a task in flight on
// the node, whichever identities it owns meanwhile), and the context
// helpers a handler reads its run's state through.

// errLeaseLost is the cause of a run's context when its node lost its lease:
// the node can no longer commit the run, and a new owner may run it again.
var errLeaseLost = errors.New("the node lost its lease: it can no longer prove that it owns the identity")

// errNodeStopping is the cause of a run's context when its node stops.
var errNodeStopping = errors.New("the node is stopping")

// IdentityLeft returns a channel that is closed when the identity of the run
// whose context is ctx moved to another node while the run was in flight
// (a planned move: MoveIdentity, draining, rebalancing). The run's context
// is not cancelled by such a move: the handler may finish, and its result is
// handed to the new owner, which commits it instead of running the fire time
// again. A handler that would rather stop may return early; its outcome then
// is what it returns. It returns nil for a context that is not a run's.
func IdentityLeft(ctx context.Context) <-chan struct{} {
	if f, ok := ctx.Value(flightKey{}).(*held.Flight); ok {
		return f.Left
	}
	return nil
}

type flightKey struct{}

// LeaseDeadline returns the instant until which the node running the run
// whose context is ctx has proven its lease live (its last acknowledged
// renewal's send time plus two thirds of the TTL), as of now; ok is false
// for a context that is not a run's. A handler that starts its work in
// another process hands it this deadline, so that the work itself refuses
// to begin after it: a node paused between its last check and the work's
// start cannot otherwise be stopped (the exec handler does this).
func LeaseDeadline(ctx context.Context) (deadline time.Time, ok bool) {
	if d, ok := ctx.Value(leaseDeadlineKey{}).(time.Time); ok {
		return d, true
	}
	f, ok := ctx.Value(flightKey{}).(*held.Flight)
	if !ok {
		return time.Time{}, false
	}
	return f.Member.Deadline(), true
}

type leaseDeadlineKey struct{}

// ContextWithLeaseDeadline returns ctx carrying a lease deadline, as a run's
// context does: for tests of handlers outside a node.
func ContextWithLeaseDeadline(ctx context.Context, deadline time.Time) context.Context {
	return context.WithValue(ctx, leaseDeadlineKey{}, deadline)
}

// LeaseProven reports whether the node running the run whose context is
// ctx can still prove that its lease is live, and the run has not been
// cancelled: the node checks this immediately before it calls a handler,
// and a handler whose work starts later (after a fork, after connecting
// somewhere) checks it again at the last moment before that work begins,
// returning ErrLeaseNotProven if it is false. A paused node (SIGSTOP) can
// otherwise resume between the node's check and the handler's work, long
// after another node took the identity over. It is true for a context that
// is not a run's.
func LeaseProven(ctx context.Context) bool {
	if d, ok := ctx.Value(leaseDeadlineKey{}).(time.Time); ok {
		return time.Now().Before(d)
	}
	f, ok := ctx.Value(flightKey{}).(*held.Flight)
	if !ok {
		return true
	}
	return f.Ctx.Err() == nil && f.Member.Fresh()
}

// beginFlightLocked registers a run of ref about to start; ok is false when
// one is already in flight. Caller holds n.mu.
func (n *Node) beginFlightLocked(ref held.Ref) (*held.Flight, bool) {
	return n.flights.Begin(ref, n.life.runCtx, n.member, withFlight)
}

// withFlight is ctx carrying run f, for IdentityLeft, LeaseDeadline and
// LeaseProven.
func withFlight(ctx context.Context, f *held.Flight) context.Context {
	return context.WithValue(ctx, flightKey{}, f)
}

// inFlightLocked reports whether a run of ref is in flight here. Caller
// holds n.mu.
func (n *Node) inFlightLocked(ref held.Ref) bool { return n.flights.Of(ref) != nil }

// identityFlightsLocked counts the runs of identity id in flight. Caller
// holds n.mu.
func (n *Node) identityFlightsLocked(id string) int {
	c := 0
	for range n.flights.Owned(id) {
		c++
	}
	return c
}

// identityLeftFlightsLocked tells the runs in flight of a durable identity
// that it moved away. Caller holds n.mu.
func (n *Node) identityLeftFlightsLocked(id string) {
	for f := range n.flights.Owned(id) {
		if !f.LeftDone {
			f.LeftDone = true
			close(f.Left)
			if f.Armed != nil {
				n.disarmLocked(f.Armed, "its identity left this node")
			}
		}
	}
}

// fenceFlightsLocked cancels the handlers of every durable run in flight:
// the node can no longer prove it owns their identities. Caller holds n.mu.
func (n *Node) fenceFlightsLocked(cause error) {
	for f := range n.flights.Owned("") {
		f.Cancel(cause)
		if f.Armed != nil {
			n.fireLocked(f.Armed) // settles now, not called
		}
	}
}

// endFlight settles a run: it leaves the registry, and the task's current
// entry, if the node holds one (the identity may have left and come back
// meanwhile), takes rec at rev when that is newer than what it has and
// goes back in the queue. rec is nil when the run left no newer record
// known here (it was forwarded or dropped).
func (n *Node) endFlight(f *held.Flight, rec *storev1.TaskRecord, rev int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f.Cancel(nil)
	n.flights.End(f)
	e := n.entryLocked(f.Ref)
	if e == nil {
		return
	}
	if rec != nil && (rev == 0 || rev >= e.Rev) {
		e.Rec, e.Raw, e.Rev = rec, "", rev
	}
	e.Running = false
	n.reschedLocked(e)
}

// entryLocked returns the node's current entry of ref, or nil. Caller holds
// n.mu.
func (n *Node) entryLocked(ref held.Ref) *held.Entry {
	st := scopeImpl(ref.Scope).table(n)[ref.Identity]
	if st == nil || st.Lost {
		return nil
	}
	return st.Tasks.Get(ref.Task)
}

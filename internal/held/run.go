package held

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/membership"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Scope names a scope: what an Ident and a Ref carry (one
// byte, where the interface value would take sixteen in every identity the
// node holds and every key of its runs in flight). impl is its behaviour.
type Scope uint8

const (
	ScopeOwned Scope = iota
	ScopeLocal
	ScopeEvery
)

// Scopes are the three kinds, for what goes over every scope's table.
var Scopes = [...]Scope{ScopeOwned, ScopeLocal, ScopeEvery}

// scopeRules is what each scope's tasks do differently, in one place:
// every branch on a task's scope outside the node's scope implementations
// asks one of these, never which scope it is.
var scopeRules = [...]struct {
	owned, armsAhead, overlaps, goesCold, votes, purgesFinished bool
}{
	ScopeOwned: {owned: true, armsAhead: true, overlaps: true, goesCold: true, votes: true, purgesFinished: true},
	// An EVERY_NODE task is stored once for all nodes, its progress by
	// each node; a non-durable one is in this node's memory only. Neither
	// is owned, armed, overlapped, dropped from memory or voted on.
	// An EVERY_NODE task is purged by its canceller, not by a node that
	// runs it.
	ScopeLocal: {purgesFinished: true},
	ScopeEvery: {},
}

// ScopeOf is the scope rec's spec asks for: the one place a spec's
// fields pick a scope.
func ScopeOf(rec *storev1.TaskRecord) Scope {
	switch {
	case rec.GetSpec().GetScope() == taskdv1.Scope_SCOPE_EVERY_NODE:
		return ScopeEvery
	case rec.GetSpec().GetNonDurable():
		return ScopeLocal
	}
	return ScopeOwned
}

// Owned reports whether the identity is owned here at an epoch
// (IDENTITY): its epoch fences the starts and commits, its runs end when
// the node cannot prove its lease, and a move away tells them so.
func (k Scope) Owned() bool { return scopeRules[k].owned }

// ArmsAhead reports whether a task's start may be written within the
// look-ahead before its fire time: its record is the node's alone to
// write, fenced on the epoch, and an armed start can be undone.
func (k Scope) ArmsAhead() bool { return scopeRules[k].armsAhead }

// Overlaps reports whether a task that allows overlap starts its next
// fire time while its run is in flight (as a task of its own, stored).
func (k Scope) Overlaps() bool { return scopeRules[k].overlaps }

// GoesCold reports whether a task waiting far from its fire time keeps
// its record encoded or not at all: it can be read back from etcd.
func (k Scope) GoesCold() bool { return scopeRules[k].goesCold }

// Votes reports whether a task counts in its identity's active-status
// vote (an identity not owned here has no vote).
func (k Scope) Votes() bool { return scopeRules[k].votes }

// PurgesFinished reports whether the node that runs a finished task
// purges it at the end of its retention.
func (k Scope) PurgesFinished() bool { return scopeRules[k].purgesFinished }

// Ref names one task of the node.
type Ref struct {
	Scope    Scope // the task's scope (its table of identities, its keyspace)
	Identity string
	Task     string
}

// Owned reports whether r names a task of an identity owned here
// (IDENTITY scope).
func (r Ref) Owned() bool { return r.Scope.Owned() }

// Ref is e's task: its key among the runs in flight.
func (e *Entry) Ref() Ref {
	return Ref{Scope: e.Ident.Scope, Identity: e.Ident.Name, Task: e.ID}
}

// Flight is one run in flight.
type Flight struct {
	Ref Ref
	// Member is the node's membership: its lease's deadline and freshness,
	// which LeaseDeadline and LeaseProven read for the run's handler.
	Member *membership.Member
	// Ctx is the handler's context (before its timeout): it ends when the
	// node stops, or when the node can no longer prove it owns the identity
	// (its lease was lost), with the reason as its cause.
	Ctx    context.Context
	Cancel context.CancelCauseFunc
	// Left is closed when the identity moved away in a planned move: the
	// run goes on and its result is forwarded to the new owner.
	Left     chan struct{}
	LeftDone bool
	// Token is the token of the run's kind's limit, given back when the
	// run ends (pkg/taskservice's limits.go).
	Token *KindLimit
	// Reserved is the remote worker's slot the run holds from its start
	// until its call takes it (pkg/taskservice's workerwait.go).
	Reserved Slot
	// Armed is the run while it is armed and waits for its fire time
	// (pkg/taskservice's arming.go); Slotless is set when it is launched without
	// a run slot (it is not to be called).
	Armed    *Armed
	Slotless bool
}

// Armed is a run whose start is written and whose handler waits for its
// fire time.
type Armed struct {
	E      *Entry
	Flight *Flight
	Rec    *storev1.TaskRecord // the record as started
	Epoch  int64               // the identity's epoch the start is fenced on
	Rev    int64               // the task's revision the start wrote
	Lease  clientv3.LeaseID    // the node's lease the start was planned under
	At     time.Time           // when the handler may be called
	Launch func()              // the launcher's: FIRED, then the handler
	Seq    uint64              // arming order
	Idx    int                 // index in the node's armed heap; -1 once out
	Stale  bool                // the task changed here since the start
	// Confirmed is when the check that confirmed the run was answered
	// (zero: not yet); a confirmation older than confirmFor is made again.
	Confirmed time.Time
}

package held

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/membership"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
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

// Owned reports whether the identity is owned here at an epoch
// (IDENTITY): its epoch fences the starts, and the look-ahead, overlapping
// runs and cold records apply.
func (k Scope) Owned() bool { return k == ScopeOwned }

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

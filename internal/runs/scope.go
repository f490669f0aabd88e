package runs

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/writepath"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// scope is what differs between the three scopes a task can have (contract
// §6), so that a run's start, commit and settling, and a task's purge, are
// one path each through the node, with the scope's part behind this
// interface. Each implementation holds no state: a held.Ident carries
// its scope's kind (held.Scope), and the run path passes itself in.
//
//   - ownedScope (IDENTITY, durable): the identity is owned here at an
//     epoch; the task's record is written fenced on the epoch and its
//     revision (scope_owned.go).
//   - everyScope (EVERY_NODE): stored once, run on every node; this node
//     writes only its own progress, fenced on its registration
//     (scope_every.go).
//   - localScope (non-durable): kept in memory only; nothing is written
//     (scope_local.go).
type scope interface {
	// ownsRecord reports whether the task's record is this node's to
	// rewrite (an EVERY_NODE task's shared record is not).
	ownsRecord() bool
	// snapLocked adds to s what a start of e carries under this scope.
	snapLocked(e *held.Entry, s *startSnap)
	// writeStart writes the run marker of plan p for e (see
	// Path.writeStart).
	writeStart(n *Path, e *held.Entry, p startPlan, snap startSnap) (int64, func(), bool)
	// beginCommit starts the commit of a run's result: it returns the
	// state the stored commit loop starts from, or nil when the scope
	// records the result in memory, which it then has done.
	beginCommit(n *Path, e *held.Entry, f *held.Flight, p startPlan, res runResult, ev Event, outcomeEvent EventType, epoch, rev int64) *commitState
	// resultWrite builds the Txn that commits rec with its history entry.
	resultWrite(n *Path, e *held.Entry, c *commitState, rec *storev1.TaskRecord, hist *taskdv1.Run) (resultTxn, error)
	// commitConflict handles a commit whose fence failed (see
	// Path.commitConflict).
	commitConflict(n *Path, e *held.Entry, f *held.Flight, c *commitState, p startPlan, res runResult,
		r writepath.Refusal, ev Event, outcomeEvent EventType) (bool, error)
	// forwardedResult reads the result another node forwarded for the run
	// of marker m, and whether that node is still registered under the
	// marker's incarnation.
	forwardedResult(n *Path, e *held.Entry, m *storev1.RunMarker) (*storev1.ForwardedResult, bool, error)
	// settling is the Txn that settles a run marker, from its commit's.
	settling(n *Path, e *held.Entry, commit writepath.Txn) writepath.Txn
	// settleFailed handles a settling Txn that failed or was refused.
	settleFailed(n *Path, e *held.Entry, snap startSnap, txn writepath.Txn, resp *clientv3.TxnResponse, err error)
	// purge deletes a finished task at the end of its retention.
	purge(n *Path, e *held.Entry, rec *storev1.TaskRecord, rev, epoch int64)
}

// scopes are the three scopes' behaviours, by kind; ranged over for what
// goes over every table.
var scopes = [...]scope{held.ScopeOwned: ownedScope{}, held.ScopeLocal: localScope{}, held.ScopeEvery: everyScope{}}

// scopeImpl is the behaviour of the scope of kind k.
func scopeImpl(k held.Scope) scope { return scopes[k] }

// nodeRuns is the node's run path as the dispatcher calls it
// (dispatch.Runner): the start of a due entry (start.go), the run of an
// overlap shadow (overlap.go) and the purge of a finished task, as its
// scope does it.
type nodeRuns Path

func (r *nodeRuns) Start(e *held.Entry, ahead time.Duration) (func(), *held.Armed) {
	return (*Path)(r).start(e, ahead)
}
func (r *nodeRuns) StartOverlap(s *held.Entry)     { (*Path)(r).startOverlap(s) }
func (r *nodeRuns) DropShadowLocked(e *held.Entry) { (*Path)(r).dropShadowLocked(e) }
func (r *nodeRuns) StartCtx() (context.Context, context.CancelFunc) {
	return (*Path)(r).startCtx()
}
func (r *nodeRuns) PurgeRecord(k held.Scope, e *held.Entry, rec *storev1.TaskRecord, rev, epoch int64) {
	scopeImpl(k).purge((*Path)(r), e, rec, rev, epoch)
}

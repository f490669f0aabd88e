package runs

import (
	"errors"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/writepath"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// localScope is the scope of non-durable tasks: kept in this node's memory
// only, nothing written to etcd; a run leaves no marker, so nothing is
// ever settled, forwarded or fenced.
type localScope struct{}

// errLocalScope is what the stored paths answer if they are ever reached
// for a non-durable task: nothing of it is stored.
var errLocalScope = errors.New("a non-durable task has no stored record")

func (localScope) ownsRecord() bool                   { return true }
func (localScope) snapLocked(*held.Entry, *startSnap) {}

// writeStart writes nothing.
func (localScope) writeStart(_ *Path, e *held.Entry, p startPlan, _ startSnap) (int64, func(), bool) {
	return 0, func() { e.Rec = p.Rec }, true
}

// beginCommit records the result in memory.
func (localScope) beginCommit(n *Path, _ *held.Entry, f *held.Flight, p startPlan, res runResult, ev Event, outcomeEvent EventType, _, _ int64) *commitState {
	rec := record.Clone(p.Rec)
	_, next := applyResult(rec, p.Marker, res, n.cfg.Name, jitter())
	n.d.EndFlight(f, rec, 0)
	n.emitResult(ev, outcomeEvent, next, rec)
	return nil
}

func (localScope) resultWrite(*Path, *held.Entry, *commitState, *storev1.TaskRecord, *taskdv1.Run) (resultTxn, error) {
	return resultTxn{}, errLocalScope
}

func (localScope) commitConflict(*Path, *held.Entry, *held.Flight, *commitState, startPlan, runResult, writepath.Refusal, Event, EventType) (bool, error) {
	return false, errLocalScope
}

func (localScope) forwardedResult(*Path, *held.Entry, *storev1.RunMarker) (*storev1.ForwardedResult, bool, error) {
	return nil, false, errLocalScope
}

func (localScope) settling(_ *Path, _ *held.Entry, commit writepath.Txn) writepath.Txn {
	return commit
}

func (localScope) settleFailed(*Path, *held.Entry, startSnap, writepath.Txn, *clientv3.TxnResponse, error) {
}

// purge drops the task's calendar references, written under the node's
// lease, and its entry.
func (localScope) purge(n *Path, e *held.Entry, rec *storev1.TaskRecord, _, _ int64) {
	if rec != nil {
		n.refs.Drop(rec, rec.GetSpec().GetCalendars())
	}
	n.d.RemovePurged(e)
}

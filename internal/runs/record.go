package runs

import (
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/record"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The task record's state machine is internal/record. This file is what
// the node adds to it: what it knows of a run's start and end besides the
// record, and the events the machine's outcomes are told as.

func ts(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

// startPlan is record.PlanStart's start, with what the node knows of it.
type startPlan struct {
	record.Start
	ready time.Time // when the run became due on this node (Event.Ready)
	// before is, for a run armed ahead of its fire time, the record before
	// its start: written back if its handler is not called (internal/dispatch/arming.go).
	before *storev1.TaskRecord
}

// runResult is how a run ended.
type runResult struct {
	outcome  taskdv1.Outcome
	message  string
	retry    bool      // retryable failure
	retryAt  time.Time // retryable failure: the earliest retry (RetryAt); zero: the backoff's
	snooze   time.Time // run the same fire time again then
	cancel   bool      // the handler cancelled the task
	again    bool      // run again now
	data     []byte
	dataSet  bool
	started  time.Time
	ended    time.Time
	fence    Fence
	recovery bool
	// notCalled: the handler was never called; the fire time runs again
	// whatever requests_recovery says (nothing ran).
	notCalled bool
	// stale: the outcome of a marker that no run reported (recorded by
	// whoever resolved it, not by the run's node).
	stale bool
	// encodeFailed: this is the ERROR recorded because the handler's result
	// could not be stored.
	encodeFailed bool
}

// forRecord is res as the state machine reads it (how it was delivered,
// stale or as a stand-in for a result that could not be stored, is the
// node's concern).
func (res runResult) forRecord() record.Result {
	return record.Result{
		Outcome: res.outcome, Message: res.message, Retry: res.retry, RetryAt: res.retryAt, Snooze: res.snooze,
		Cancel: res.cancel, Again: res.again, Data: res.data, DataSet: res.dataSet,
		Started: res.started, Ended: res.ended, Fence: res.fence.String(), Recovery: res.recovery,
		NotCalled: res.notCalled,
	}
}

// applyResult is record.ApplyResult of res, with what the record waits
// for next told as the event of the result.
func applyResult(rec *storev1.TaskRecord, m *storev1.RunMarker, res runResult, node string, backoffRnd float64) (*taskdv1.Run, EventType) {
	run, next := record.ApplyResult(rec, m, res.forRecord(), node, backoffRnd)
	return run, eventOfNext(next)
}

// eventOfNext is the event that tells what a record waits for after a run.
func eventOfNext(next record.Next) EventType {
	switch next {
	case record.RetryScheduled:
		return EventRetryScheduled
	case record.Finalized:
		return EventFinalized
	}
	return EventNextScheduled
}

// resolveStale is record.ResolveStale of res, from staleResult.
func resolveStale(rec *storev1.TaskRecord, res runResult) *taskdv1.Run {
	return record.ResolveStale(rec, res.forRecord(), rand.Float64())
}

package runs

import (
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/taskspec"
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

// runResult is how a run ended: the result the state machine folds in,
// and how it was delivered.
type runResult struct {
	record.Result // its Fence is filled in from fence by forRecord
	fence         Fence
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
	r := res.Result
	r.Fence = res.fence.String()
	return r
}

// failed is the retryable ERROR that stands in for res's outcome when it
// cannot be stored as it is, saying why, with res's timing.
func (res runResult) failed(why string) record.Result {
	return record.Result{Outcome: taskdv1.Outcome_OUTCOME_ERROR, Retry: true, Message: taskspec.CleanMessage(why),
		Started: res.Started, Ended: res.Ended, Recovery: res.Recovery}
}

// applyResult is record.ApplyResult of res, with what the record waits
// for next told as the event of the result.
func applyResult(rec *storev1.TaskRecord, m *storev1.RunMarker, res runResult, node string, backoffRnd float64) (*taskdv1.Run, EventType) {
	run, next := record.ApplyResult(rec, m, res.forRecord(), node, backoffRnd)
	return run, eventOfNext(next)
}

// eventOfNext is the event that tells what a record waits for after a run
// (record.Next names it).
func eventOfNext(next record.Next) EventType { return EventType(next.String()) }

// resolveStale is record.ResolveStale of res, from staleResult.
func resolveStale(rec *storev1.TaskRecord, res runResult) *taskdv1.Run {
	return record.ResolveStale(rec, res.forRecord(), rand.Float64())
}

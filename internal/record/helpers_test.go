package record

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The tests of this package drive the record state machine (PlanStart,
// ApplyResult, Settle, Due, UndoStart) with fixed times: no clock, no etcd.

// rt0 is the fixed "now" the tables are built around.
var rt0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	rThreshold  = 10 * time.Second // misfire threshold
	rMaxCatchUp = 10
	rNode       = "n1"
	rInc        = "inc-1"
	rEpoch      = int64(42)
	rFence      = "42.7" // the fence token of the runs of these tests: epoch rEpoch, revision 7
)

const (
	stScheduled = taskdv1.TaskState_TASK_STATE_SCHEDULED
	stRunning   = taskdv1.TaskState_TASK_STATE_RUNNING
	stRetrying  = taskdv1.TaskState_TASK_STATE_RETRYING
	stCompleted = taskdv1.TaskState_TASK_STATE_COMPLETED
	stDead      = taskdv1.TaskState_TASK_STATE_DEAD
	stCanceled  = taskdv1.TaskState_TASK_STATE_CANCELED
)

func rOnce(at time.Time) *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: timestamppb.New(at)}}}
}

func rEvery(start time.Time, iv time.Duration, count int64) *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
		Start: timestamppb.New(start), Interval: durationpb.New(iv), Count: count}}}
}

// newRecord is a freshly accepted task with spec's triggers.
func newRecord(mod func(*taskdv1.TaskSpec), trig ...*taskdv1.Trigger) *storev1.TaskRecord {
	s := &taskdv1.TaskSpec{Identity: "id", Kind: "k", Triggers: trig, Data: []byte("seed"),
		Backoff: &taskdv1.Backoff{Initial: durationpb.New(time.Second), Max: durationpb.New(10 * time.Second)}}
	if mod != nil {
		mod(s)
	}
	rec := &storev1.TaskRecord{Id: "T1", Spec: s, State: stScheduled, CreatedAt: timestamppb.New(rt0.Add(-time.Hour))}
	InitTriggers(rec, nil)
	return rec
}

// mustStart plans a start at now and fails unless it runs.
func mustStart(t *testing.T, rec *storev1.TaskRecord, now time.Time) Start {
	t.Helper()
	p := PlanStart(rec, rNode, rInc, rEpoch, Timing{Now: now, Threshold: rThreshold, MaxCatchUp: rMaxCatchUp})
	if !p.Runs || p.Marker == nil || p.Rec.Running != p.Marker || p.Rec.State != stRunning {
		t.Fatalf("PlanStart at %s: run %v marker %v state %s: want a started run", now, p.Runs, p.Marker, p.Rec.GetState())
	}
	return p
}

// finish applies res to the started plan's record (as the node's commit
// does) and returns the resulting record, history entry and what it waits
// for next.
func finish(p Start, res Result) (*storev1.TaskRecord, *taskdv1.Run, Next) {
	rec := Clone(p.Rec)
	run, next := ApplyResult(rec, p.Marker, res, rNode, 0.5)
	return rec, run, next
}

// ended is a result of the given outcome, ended at end.
func ended(outcome taskdv1.Outcome, end time.Time) Result {
	return Result{Outcome: outcome, Started: end.Add(-100 * time.Millisecond), Ended: end, Fence: rFence}
}

// retryable is a retryable error ended at end.
func retryable(end time.Time) Result {
	r := ended(taskdv1.Outcome_OUTCOME_ERROR, end)
	r.Retry = true
	return r
}

func tsEq(a *timestamppb.Timestamp, b time.Time) bool {
	if a == nil {
		return b.IsZero()
	}
	return !b.IsZero() && a.AsTime().Equal(b)
}

func fmtTS(a *timestamppb.Timestamp) string {
	if a == nil {
		return "<nil>"
	}
	return a.AsTime().Format(time.RFC3339Nano)
}

// fireNumber returns fire time k (0-based) of trig.
func fireNumber(trig *taskdv1.Trigger, k int64) (time.Time, bool) {
	at, ok := schedule.First(trig, nil)
	for i := int64(0); ok && i < k; i++ {
		at, ok = schedule.Next(trig, at, nil)
	}
	return at, ok
}

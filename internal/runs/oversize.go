package runs

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/taskspec"
	"github.com/taskd/taskd/internal/writepath"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is what a run's commit does when etcd would not take it for its
// size (ErrTooLarge, sized before sending or refused by etcd or the
// client): a write refused for its size is never retried as it is, so a
// task never stays RUNNING for it.
//
//  1. The result gives way to a failed run: ERROR, retryable (its attempt
//     counts, and it is retried by the task's policy or goes DEAD), its
//     new data and message dropped, its message saying what was too large.
//  2. If even that does not fit (the task's record itself is too large:
//     one stored before its fields had limits), the task is recorded DEAD
//     in its record without its large fields (payload, data, labels,
//     triggers), the message saying so. A DEAD task stays until cancelled;
//     its small record can be cancelled and purged.
//  3. If that does not fit either (it cannot, with the limits on the fields
//     kept), the marker stays and the error is logged.

// oversize is a commit's progress through those steps.
type oversize struct {
	shrunk      bool   // step 1 taken
	stripRecord bool   // step 2 taken
	why         string // the refusal that led to step 2
}

// shrink takes the next step after a commit refused with err (ErrTooLarge);
// false: no step is left, the flight was ended and the marker stays.
func (o *oversize) shrink(n *Path, e *held.Entry, f *held.Flight, res *runResult, ev *Event, outcomeEvent *EventType, undo bool, err error) bool {
	st := e.Ident
	switch {
	case !o.shrunk && !undo && !o.stripRecord:
		o.shrunk = true
		n.log.Error("run result too large to store; recording a failed run instead", "identity", st.Name, "task", e.ID,
			"data_bytes", len(res.Data), "message_bytes", len(res.Message), "error", err)
		*res = oversizedResult(*res, err)
		ev.Outcome, ev.Message, *outcomeEvent = res.Outcome, res.Message, EventFailed
		return true
	case !o.stripRecord && scopeImpl(st.Scope).ownsRecord():
		o.stripRecord, o.why = true, err.Error()
		n.log.Error("task record too large to store; recording the task DEAD without its large fields", "identity", st.Name,
			"task", e.ID, "error", err)
		return true
	}
	n.log.Error("run result cannot be stored even at its smallest; the marker stays", "identity", st.Name, "task", e.ID, "error", err)
	n.d.EndFlight(f, nil, 0)
	return false
}

// oversizedResult is the failed run committed instead of res, which was too
// large to store (err says by how much).
func oversizedResult(res runResult, err error) runResult {
	var parts []string
	if res.DataSet {
		parts = append(parts, fmt.Sprintf("data %s", writepath.SizeText(len(res.Data))))
	}
	parts = append(parts, fmt.Sprintf("message %s", writepath.SizeText(len(res.Message))))
	return runResult{Result: res.failed(fmt.Sprintf("outcome too large to store (%s; it was %s): %v",
		strings.Join(parts, ", "), res.Outcome, err)), fence: res.fence, stale: res.stale}
}

// stripOversized makes rec (with its history entry hist, if any) a DEAD
// record without its large fields, and returns the message it records.
func stripOversized(rec *storev1.TaskRecord, hist *taskdv1.Run, why string, now time.Time) string {
	spec := rec.Spec
	trig := 0
	for _, t := range spec.GetTriggers() {
		trig += proto.Size(t)
	}
	msg := taskspec.CleanMessage(fmt.Sprintf("the task's record is too large to store (%s); the task is DEAD, and its payload (%s), "+
		"data (%s), %d labels and %d triggers (%s) were dropped from it", why, writepath.SizeText(len(spec.GetPayload())),
		writepath.SizeText(len(spec.GetData())), len(spec.GetLabels()), len(spec.GetTriggers()), writepath.SizeText(trig)))
	if spec != nil {
		spec.Payload, spec.Data, spec.Labels, spec.Triggers = nil, nil, nil, nil
	}
	rec.Triggers, rec.TriggerVersions, rec.OverlapRuns = nil, nil, nil
	rec.State, rec.FinishedAt = taskdv1.TaskState_TASK_STATE_DEAD, ts(now)
	rec.RetryAt, rec.PendingFire, rec.RecoveryPending, rec.ManualRequested = nil, nil, nil, false
	if rec.LastRun != nil {
		rec.LastRun.Outcome, rec.LastRun.Message = taskdv1.Outcome_OUTCOME_ERROR, msg
	}
	if hist != nil {
		hist.Outcome, hist.Message = taskdv1.Outcome_OUTCOME_ERROR, msg
	}
	return msg
}

// limitOutcome turns a run's outcome that asks for what cannot be stored
// into a failed run saying what was too large (taskspec.OutcomeAsks):
// new data over --max-payload (or making the task's encoded spec pass
// MaxTaskBytes), or a snooze or an earliest retry past MaxInstant. The run
// is an ERROR, retried after backoff as a handler's error is; the task
// keeps its data. It is the one check of every handler's output (Go
// handlers, exec, webhook, remote workers), made where the outcome is
// committed.
func (n *Path) limitOutcome(res *runResult, rec *storev1.TaskRecord) {
	if res.NotCalled || res.encodeFailed || res.stale {
		return
	}
	asks := taskspec.OutcomeAsks{Data: res.Data, DataSet: res.DataSet, Snooze: res.Snooze, RetryAt: res.RetryAt}
	why := asks.Refusal(rec.GetSpec(), n.cfg.MaxPayload)
	if why == "" {
		return
	}
	n.log.Warn("run outcome refused for its size", "identity", rec.GetSpec().GetIdentity(), "task", rec.GetId(), "reason", why)
	*res = runResult{Result: res.failed("the run's outcome was refused: " + why), fence: res.fence}
}

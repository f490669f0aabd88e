package workers

import (
	"fmt"
	"strings"

	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// reportedOutcome is the outcome the node records for a worker's result
// when it commits it as reported (see outcome and the node's classify).
func reportedOutcome(r taskdv1.WorkResult) taskdv1.Outcome {
	switch r {
	case taskdv1.WorkResult_WORK_RESULT_SUCCESS:
		return taskdv1.Outcome_OUTCOME_SUCCESS
	case taskdv1.WorkResult_WORK_RESULT_WARNING, taskdv1.WorkResult_WORK_RESULT_SNOOZE:
		return taskdv1.Outcome_OUTCOME_WARNING
	case taskdv1.WorkResult_WORK_RESULT_CANCEL:
		return taskdv1.Outcome_OUTCOME_CANCELED
	default: // ERROR, PERMANENT
		return taskdv1.Outcome_OUTCOME_ERROR
	}
}

// ackOf answers the outcome of d from the node's outcome event of its run.
// It is accepted only when the node committed the outcome the worker
// reported: a success that came after the run's deadline is committed as
// a timeout error (the fire time is retried), and one that could not be
// stored as an error; the worker is told the outcome was not taken, and
// what the node recorded instead.
func ackOf(d *dispatch, ev taskservice.Event) *taskdv1.WorkAck {
	ack := &taskdv1.WorkAck{RunId: d.id}
	committed := ev.Type == taskservice.EventSucceeded || ev.Type == taskservice.EventFailed
	switch {
	case committed && ev.Outcome == d.reported:
		ack.Accepted = true
	case committed:
		ack.Reason = fmt.Sprintf("not committed as reported: the node recorded %s instead of %s: %s",
			outcomeName(ev.Outcome), outcomeName(d.reported), ev.Message)
	default:
		ack.Reason = fmt.Sprintf("%s: %s", ev.Type, ev.Message)
	}
	return ack
}

func outcomeName(o taskdv1.Outcome) string { return strings.TrimPrefix(o.String(), "OUTCOME_") }

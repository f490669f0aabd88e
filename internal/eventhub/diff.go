package eventhub

import (
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/record"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file derives the events of the client event stream (WatchEvents)
// from the writes taskd makes anyway: every step of a task's life is a
// write of its record (or of a node's progress on an EVERY_NODE task), so
// the difference between a record's previous and new version says what
// happened, and etcd's revision order is the events' order. Nothing extra
// is written for the stream.

// runView is what the event derivation reads of a task record or of a
// node's progress on an EVERY_NODE task.
type runView struct {
	running   *storev1.RunMarker
	lastRun   *taskdv1.RunSummary
	retryAt   *timestamppb.Timestamp
	misfires  int64
	triggers  []*storev1.TriggerState
	taskID    string             // with spec: what a trigger's jitter delay is seeded by
	spec      []*taskdv1.Trigger // the task's triggers
	state     taskdv1.TaskState  // UNSPECIFIED for progress
	pausedAt  *timestamppb.Timestamp
	specVer   int64
	createdAt *timestamppb.Timestamp
}

func recordView(r *storev1.TaskRecord) *runView {
	if r == nil {
		return nil
	}
	return &runView{running: r.Running, lastRun: r.LastRun, retryAt: r.RetryAt, misfires: r.Misfires,
		triggers: r.Triggers, state: r.State, pausedAt: r.PausedAt, specVer: r.SpecVersion, createdAt: r.CreatedAt,
		taskID: r.Id, spec: r.GetSpec().GetTriggers()}
}

func progressView(p *storev1.EveryNodeProgress, taskID string, spec []*taskdv1.Trigger) *runView {
	if p == nil {
		return nil
	}
	return &runView{running: p.Running, lastRun: p.LastRun, retryAt: p.RetryAt, misfires: p.Misfires, triggers: p.Triggers,
		taskID: taskID, spec: spec}
}

// taskEvents returns the events between two versions of a task record or
// progress (prev nil: created; cur nil: removed, which is no event). base
// carries identity, task id, kind and node; rev is the new version's mod
// revision, the second half of a started run's fence; every says whether
// the view is a node's progress on an EVERY_NODE task (fence epoch 0).
func taskEvents(prev, cur *runView, base *taskdv1.Event, rev int64, every bool) []*taskdv1.Event {
	if cur == nil {
		return nil
	}
	var out []*taskdv1.Event
	add := func(t taskdv1.EventType, at *timestamppb.Timestamp, mod func(*taskdv1.Event)) {
		ev := &taskdv1.Event{Type: t, Time: at, Identity: base.Identity, TaskId: base.TaskId, Kind: base.Kind,
			Node: base.Node, Trigger: -1}
		if mod != nil {
			mod(ev)
		}
		out = append(out, ev)
	}
	if prev == nil {
		if cur.state != taskdv1.TaskState_TASK_STATE_UNSPECIFIED { // a task, not a node's first progress
			add(taskdv1.EventType_EVENT_TYPE_SCHEDULED, cur.createdAt, nil)
		}
		prev = &runView{}
	}
	if d := cur.misfires - prev.misfires; d > 0 {
		add(taskdv1.EventType_EVENT_TYPE_MISFIRED, timestamppb.Now(), func(e *taskdv1.Event) { e.Count = d })
	}
	if m := cur.running; m != nil && (prev.running == nil || prev.running.RunNumber != m.RunNumber ||
		!prev.running.StartedAt.AsTime().Equal(m.StartedAt.AsTime())) {
		epoch := m.Epoch
		if every {
			epoch = 0
		}
		run := func(e *taskdv1.Event) {
			e.Node, e.RunNumber, e.Attempt, e.Trigger, e.TriggerName = m.Node, m.RunNumber, m.Attempt, m.Trigger, m.TriggerName
			e.Fence = fmt.Sprintf("%d.%d", epoch, rev)
			e.Next = m.FireTime
			e.FireTime = m.FireTime
		}
		add(taskdv1.EventType_EVENT_TYPE_FIRED, m.StartedAt, run)
		add(taskdv1.EventType_EVENT_TYPE_STARTED, m.StartedAt, run)
	}
	if lr := cur.lastRun; lr != nil && (prev.lastRun == nil || prev.lastRun.RunNumber != lr.RunNumber ||
		!prev.lastRun.EndedAt.AsTime().Equal(lr.EndedAt.AsTime())) {
		result := func(e *taskdv1.Event) {
			e.Node, e.RunNumber, e.Outcome, e.Message = lr.Node, lr.RunNumber, lr.Outcome, lr.Message
		}
		add(outcomeEventType(lr.Outcome), lr.EndedAt, result)
		switch {
		case cur.retryAt != nil:
			add(taskdv1.EventType_EVENT_TYPE_RETRYING, lr.EndedAt, func(e *taskdv1.Event) { result(e); e.Next = cur.retryAt })
		case record.IsFinal(cur.state):
			if cur.state == taskdv1.TaskState_TASK_STATE_DEAD {
				add(taskdv1.EventType_EVENT_TYPE_DEAD, lr.EndedAt, result)
			}
			add(taskdv1.EventType_EVENT_TYPE_FINALIZED, lr.EndedAt, result)
		default:
			add(taskdv1.EventType_EVENT_TYPE_NEXT_SCHEDULED, lr.EndedAt, func(e *taskdv1.Event) {
				result(e)
				if at, ok := record.NextDue(cur.taskID, cur.spec, cur.triggers); ok {
					e.Next = timestamppb.New(at)
				}
			})
		}
	} else if cur.state == taskdv1.TaskState_TASK_STATE_CANCELED && prev.state != taskdv1.TaskState_TASK_STATE_CANCELED &&
		prev.state != taskdv1.TaskState_TASK_STATE_UNSPECIFIED {
		add(taskdv1.EventType_EVENT_TYPE_CANCELED, timestamppb.Now(), nil)
	}
	switch {
	case cur.pausedAt != nil && prev.pausedAt == nil:
		add(taskdv1.EventType_EVENT_TYPE_PAUSED, cur.pausedAt, func(e *taskdv1.Event) { e.Message = "task" })
	case cur.pausedAt == nil && prev.pausedAt != nil:
		add(taskdv1.EventType_EVENT_TYPE_RESUMED, timestamppb.Now(), func(e *taskdv1.Event) { e.Message = "task" })
	}
	if cur.specVer > prev.specVer && prev.state != taskdv1.TaskState_TASK_STATE_UNSPECIFIED {
		add(taskdv1.EventType_EVENT_TYPE_UPDATED, timestamppb.Now(), nil)
	}
	return out
}

func outcomeEventType(o taskdv1.Outcome) taskdv1.EventType {
	switch o {
	case taskdv1.Outcome_OUTCOME_SUCCESS, taskdv1.Outcome_OUTCOME_WARNING:
		return taskdv1.EventType_EVENT_TYPE_SUCCEEDED
	case taskdv1.Outcome_OUTCOME_DROPPED:
		return taskdv1.EventType_EVENT_TYPE_DROPPED
	case taskdv1.Outcome_OUTCOME_INTERRUPTED:
		return taskdv1.EventType_EVENT_TYPE_INTERRUPTED
	case taskdv1.Outcome_OUTCOME_CANCELED:
		return taskdv1.EventType_EVENT_TYPE_CANCELED
	case taskdv1.Outcome_OUTCOME_VETOED:
		return taskdv1.EventType_EVENT_TYPE_VETOED
	}
	return taskdv1.EventType_EVENT_TYPE_FAILED
}

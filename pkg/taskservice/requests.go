package taskservice

// The node's requests: the tasks, calendars, pauses, identities and nodes
// of the cluster, read and changed from any node. internal/taskapi answers
// them (through the write path, fenced as each doc comment says) and tells
// the node's engine what changed (engineside.go); each method's doc
// comment here is its contract.

import (
	"context"
	"time"

	"github.com/taskd/taskd/internal/taskapi"
	"github.com/taskd/taskd/internal/taskspec"
	"github.com/taskd/taskd/pkg/pending"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Scheduled is one accepted task: its view, and whether an idempotency
// key returned an earlier task (Existing).
type Scheduled = taskapi.Scheduled

// TaskFilter selects the tasks ListTasks returns; empty fields match all.
type TaskFilter = taskapi.TaskFilter

// Preview limits.
const (
	DefaultPreviewCount = taskspec.DefaultPreviewCount
	MaxPreviewCount     = taskspec.MaxPreviewCount
)

// Schedule validates and stores tasks (at most MaxBatch) and returns them in
// request order. Durable tasks are in etcd when it returns: the tasks of one
// identity are written in one Txn together with the identity's mapping
// compare (and, for an unmapped identity, the new mapping).
//
// An error about one spec is a *SpecError: it holds the spec's index and
// names the field relative to the spec ("triggers[0].cron.expression"),
// and its message names it as a ScheduleTasks request does
// ("tasks[2].triggers[0].cron.expression"); SpecError.In names it under
// another path. An error about the specs as a whole (none, more than
// MaxBatch) is an *InvalidArgumentError naming "tasks".
func (n *Node) Schedule(ctx context.Context, specs []*taskdv1.TaskSpec) ([]Scheduled, error) {
	return n.api.Schedule(ctx, specs)
}

// ListTasks returns a page of durable tasks matching f, and the token of
// the next page ("" after the last). Non-durable tasks are not listed
// (they exist only on the node that took them; GetTask there shows one).
func (n *Node) ListTasks(ctx context.Context, f TaskFilter, pageSize int, pageToken string) ([]*taskdv1.Task, string, error) {
	return n.api.ListTasks(ctx, f, pageSize, pageToken)
}

// GetTask returns one task.
func (n *Node) GetTask(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	return n.api.GetTask(ctx, id, taskID)
}

// ListRuns returns a task's run history, newest first.
func (n *Node) ListRuns(ctx context.Context, id, taskID string) ([]*taskdv1.Run, error) {
	return n.api.ListRuns(ctx, id, taskID)
}

// GetIdentity returns an identity's mapping and task count.
func (n *Node) GetIdentity(ctx context.Context, id string) (*taskdv1.Identity, error) {
	return n.api.GetIdentity(ctx, id)
}

// ListNodes returns the registered nodes, by name.
func (n *Node) ListNodes(ctx context.Context) ([]*taskdv1.Node, error) { return n.api.ListNodes(ctx) }

// DescribeNodes is ListNodes with each node's standing: which one is the
// placement leader, and how long each lease has left. It asks etcd once
// more per node, so it serves the API, not the node's own loops.
func (n *Node) DescribeNodes(ctx context.Context) ([]*taskdv1.Node, error) {
	return n.api.DescribeNodes(ctx)
}

// PreviewTriggers returns the first count fire times at or after from that
// triggers make under the named calendars, merged in time order, without
// scheduling anything. Triggers are resolved as ScheduleTask would resolve
// them at from (a delay counts from it, a periodic trigger without a start
// starts one interval after it, a cron trigger without a start at it). An
// on-start-up trigger makes no fire time here.
func (n *Node) PreviewTriggers(ctx context.Context, triggers []*taskdv1.Trigger, calendars []string, from time.Time, count int) ([]*taskdv1.PreviewFireTime, error) {
	return n.api.PreviewTriggers(ctx, "", triggers, calendars, from, count)
}

// PreviewTaskTriggers is PreviewTriggers for the task taskID (a task id,
// stored or not): each fire time is the instant that task's run of it is
// due, delayed by its trigger's jitter, which the task's id and the
// trigger's name fix (an unnamed trigger is named "#<index>" as a new
// task's are).
func (n *Node) PreviewTaskTriggers(ctx context.Context, taskID string, triggers []*taskdv1.Trigger, calendars []string, from time.Time, count int) ([]*taskdv1.PreviewFireTime, error) {
	if !pending.ValidTaskID(taskID) {
		return nil, invalid("task_id", "%q is not a task id (26 characters of base32)", taskID)
	}
	return n.api.PreviewTriggers(ctx, taskID, triggers, calendars, from, count)
}

// UpdateTask replaces an existing task's spec (Quartz's rescheduleJob): its
// triggers, calendars, payload, priority, retry settings, timeout, labels.
// The task keeps its id, run numbers, history and (unless spec.data is
// set) its data. A trigger keeps its name and progress when it is given
// under its name with its rule unchanged, or without a name with the rule
// of a server-named trigger (taskspec.MatchTriggers); one given under its name with
// another rule keeps the name and starts afresh, and any other trigger is
// new: it starts as on a newly scheduled task, named by the server if it
// has no name. A trigger the spec leaves out is gone with its name. The
// write is fenced like every task write and, when wantRev is not 0,
// conditional on the task still being at that revision (ErrConflict:
// ABORTED). A run in flight finishes; its result is folded into the
// updated task.
func (n *Node) UpdateTask(ctx context.Context, id, taskID string, spec *taskdv1.TaskSpec, wantRev int64) (*taskdv1.Task, error) {
	return n.api.UpdateTask(ctx, id, taskID, spec, wantRev)
}

// DeleteTask removes a task in a final state (COMPLETED, DEAD, CANCELED)
// with its run history, idempotency key and calendar references. A task in
// another state is ErrFailedPrecondition: a task is stopped by CancelTask,
// which says so in its state and its events, never by vanishing while it
// may run.
//
// The delete is one Txn conditional on the revision of the task it read in
// its final state, so it never removes a task that changed since (a run
// that was in flight when it was cancelled commits first, and the delete
// is tried again on what it wrote); a run whose commit comes after finds
// the task gone and is dropped, its result with it. For an IDENTITY task
// the Txn is fenced like any task change from a non-owner (the mapping
// read, and a handoff entry telling the owner to drop its copy); an
// EVERY_NODE task goes with every node's history and progress on it.
func (n *Node) DeleteTask(ctx context.Context, id, taskID string) error {
	return n.api.DeleteTask(ctx, id, taskID)
}

// CancelTask cancels a task: no further runs. A run in flight finishes and
// is recorded, but does not reschedule the task.
func (n *Node) CancelTask(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	return n.api.CancelTask(ctx, id, taskID)
}

// RunTaskNow asks for one manual run at once; the schedule stays as it was.
func (n *Node) RunTaskNow(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	return n.api.RunTaskNow(ctx, id, taskID)
}

// EditTriggers adds triggers to a task and removes some of its triggers by
// name (Quartz's scheduleJob of one more trigger and unscheduleJob of one),
// in one write: the triggers it does not name keep their names, their
// progress and their version, so they neither fire again nor skip a fire
// time. An added trigger starts as on a newly scheduled task and is named
// by the server if it has no name. The write is fenced like UpdateTask's
// and, when wantRev is not 0, conditional on the task's revision
// (ErrConflict). A run in flight finishes and is recorded under the
// trigger that fired it, even if that trigger is removed; so does a fire
// time of a removed trigger already being retried.
//
// Removing every trigger without adding one is refused
// (ErrFailedPrecondition): a task ends by CancelTask, which says so in its
// state, not by losing its triggers. Removing the triggers that still have
// fire times while keeping ones that have none completes the task, as an
// UpdateTask to such triggers would.
func (n *Node) EditTriggers(ctx context.Context, id, taskID string, add []*taskdv1.Trigger, remove []string, wantRev int64) (*taskdv1.Task, error) {
	return n.api.EditTriggers(ctx, id, taskID, add, remove, wantRev)
}

// CreateCalendar stores a calendar; with replace it may overwrite one of
// the same name (its tasks keep it: the new rules apply to fire times not
// yet come).
func (n *Node) CreateCalendar(ctx context.Context, c *taskdv1.Calendar, replace bool) (*taskdv1.Calendar, error) {
	return n.api.CreateCalendar(ctx, c, replace)
}

// GetCalendar returns one calendar.
func (n *Node) GetCalendar(ctx context.Context, name string) (*taskdv1.Calendar, error) {
	return n.api.GetCalendar(ctx, name)
}

// ListCalendars returns every calendar, by name.
func (n *Node) ListCalendars(ctx context.Context) ([]*taskdv1.Calendar, error) {
	return n.api.ListCalendars(ctx)
}

// DeleteCalendar removes a calendar that no task and no calendar uses
// (ErrFailedPrecondition naming a user otherwise).
func (n *Node) DeleteCalendar(ctx context.Context, name string) error {
	return n.api.DeleteCalendar(ctx, name)
}

// PauseIdentity pauses every task of identity id, those scheduled later
// included, until ResumeIdentity. Pausing a paused identity returns the
// pause in force.
func (n *Node) PauseIdentity(ctx context.Context, id string) (*taskdv1.Pause, error) {
	return n.api.PauseIdentity(ctx, id)
}

// ResumeIdentity lifts PauseIdentity (resuming an identity that is not
// paused is a no-op).
func (n *Node) ResumeIdentity(ctx context.Context, id string) error {
	return n.api.ResumeIdentity(ctx, id)
}

// PauseKind pauses every task of kind in the cluster, those scheduled later
// included, until ResumeKind.
func (n *Node) PauseKind(ctx context.Context, kind string) (*taskdv1.Pause, error) {
	return n.api.PauseKind(ctx, kind)
}

// ResumeKind lifts PauseKind.
func (n *Node) ResumeKind(ctx context.Context, kind string) error { return n.api.ResumeKind(ctx, kind) }

// ListPauses returns the identity pauses, then the kind pauses, each by name.
func (n *Node) ListPauses(ctx context.Context) ([]*taskdv1.Pause, error) {
	return n.api.ListPauses(ctx)
}

// PauseTask pauses one task until ResumeTask. A run in flight finishes.
func (n *Node) PauseTask(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	return n.api.PauseTask(ctx, id, taskID)
}

// ResumeTask lifts PauseTask.
func (n *Node) ResumeTask(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	return n.api.ResumeTask(ctx, id, taskID)
}

// MoveIdentity moves id to the RUNNING node to (contract §3.1): one Txn changes
// the mapping (a new epoch) and writes the handoff entry that the new owner
// picks up; the old owner drops the identity when it sees the change.
func (n *Node) MoveIdentity(ctx context.Context, id, to string) (*taskdv1.Identity, error) {
	return n.api.MoveIdentity(ctx, id, to)
}

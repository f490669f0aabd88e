package client

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"iter"
	"time"

	"google.golang.org/grpc/status"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// MaxBatch is the most tasks one ScheduleMany request carries.
const MaxBatch = 100

// Schedule stores one task and returns it. A durable task without an
// IdempotencyKey gets a random one, so that a retry after UNAVAILABLE or a
// timeout, when the first attempt was stored but its answer lost, returns
// that first task instead of storing a second. existing is true when the
// key returned a task stored before the answering attempt: by an earlier
// call with the same key, or by this call's own attempt whose answer was
// lost. With WithoutGeneratedKeys a task without a key is stored without
// one, and the call is not retried once it may have reached a node.
func (c *Client) Schedule(ctx context.Context, spec TaskSpec) (task *Task, existing bool, err error) {
	p := spec.toProto()
	r := c.keyed(p)
	resp, err := send(ctx, c, "Schedule", r, taskdv1.TaskServiceClient.ScheduleTask, &taskdv1.ScheduleTaskRequest{Task: p}, asIs)
	if err != nil {
		return nil, false, err
	}
	return taskFromProto(resp.GetTask()), resp.GetExisting(), nil
}

// ScheduleMany stores up to MaxBatch tasks in one request and returns them
// in the order given. Keys are filled in as by Schedule, so a retried batch
// stores each task once.
func (c *Client) ScheduleMany(ctx context.Context, specs []TaskSpec) ([]*Task, error) {
	if len(specs) > MaxBatch {
		return nil, invalid("ScheduleMany", "specs", "%d tasks, the limit of one batch is %d", len(specs), MaxBatch)
	}
	req := &taskdv1.ScheduleTasksRequest{}
	r := idempotent
	for _, s := range specs {
		p := s.toProto()
		if c.keyed(p) == once {
			r = once
		}
		req.Tasks = append(req.Tasks, p)
	}
	return send(ctx, c, "ScheduleMany", r, taskdv1.TaskServiceClient.ScheduleTasks, req,
		func(resp *taskdv1.ScheduleTasksResponse) []*Task { return each(resp.GetTasks(), taskFromProto) })
}

// keyed gives a durable task without an idempotency key a random one
// (unless WithoutGeneratedKeys) and says how a call that stores it may be
// retried: only a key makes a second delivery harmless.
func (c *Client) keyed(p *taskdv1.TaskSpec) retry {
	switch {
	case p.NonDurable:
		return once
	case p.IdempotencyKey != "":
		return idempotent
	case c.o.keepKeyless:
		return once
	}
	p.IdempotencyKey = newKey()
	return idempotent
}

// newKey is a random idempotency key: 128 bits, so two never meet.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return "client-" + base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
}

// Get returns a task, with its next five fire times.
func (c *Client) Get(ctx context.Context, identity, taskID string) (*Task, error) {
	return send(ctx, c, "Get", idempotent, taskdv1.TaskServiceClient.GetTask,
		&taskdv1.GetTaskRequest{Identity: identity, TaskId: taskID}, taskOf)
}

// ListFilter selects tasks for List. Identity empty lists the whole
// cluster; the other fields narrow it.
type ListFilter struct {
	Identity string
	States   []State
	Kind     string
	Labels   map[string]string
	// Node keeps tasks of identities that node owns (and EVERY_NODE tasks).
	Node string
	// PageSize is how many tasks each request fetches (1-1000; 0: 100).
	PageSize int32
}

// List yields the tasks that match f, fetching a page at a time, in key
// order: by identity, then creation. It stops at the first error, which it
// yields.
func (c *Client) List(ctx context.Context, f ListFilter) iter.Seq2[*Task, error] {
	return func(yield func(*Task, error) bool) {
		req, err := f.request("List")
		if err != nil {
			yield(nil, err)
			return
		}
		for {
			page, err := send(ctx, c, "List", idempotent, taskdv1.TaskServiceClient.ListTasks, req, asIs)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, t := range page.GetTasks() {
				if !yield(taskFromProto(t), nil) {
					return
				}
			}
			if page.GetNextPageToken() == "" {
				return
			}
			req.PageToken = page.GetNextPageToken()
		}
	}
}

// ListPage returns one page of the tasks List yields, the one pageToken
// names ("" the first), with the token of the next page ("" after the
// last): for a caller that shows a page at a time and lets its user go on.
// A token is good only for the filter it came with.
func (c *Client) ListPage(ctx context.Context, f ListFilter, pageToken string) (tasks []*Task, next string, err error) {
	req, err := f.request("ListPage")
	if err != nil {
		return nil, "", err
	}
	req.PageToken = pageToken
	page, err := send(ctx, c, "ListPage", idempotent, taskdv1.TaskServiceClient.ListTasks, req, asIs)
	return each(page.GetTasks(), taskFromProto), page.GetNextPageToken(), err
}

// request is the first ListTasks request of f; op names the caller in an
// error.
func (f ListFilter) request(op string) (*taskdv1.ListTasksRequest, error) {
	states, err := enumsToProto(op, "States", f.States, stateToProto, "a task state (SCHEDULED, RUNNING, RETRYING, PAUSED, COMPLETED, DEAD, CANCELED)")
	if err != nil {
		return nil, err
	}
	return &taskdv1.ListTasksRequest{Identity: f.Identity, States: states, Kind: f.Kind, Labels: f.Labels, Node: f.Node, PageSize: f.PageSize}, nil
}

// Cancel stops a task's future runs and returns it; cancelling a cancelled
// task returns it unchanged, so the call is retried safely.
func (c *Client) Cancel(ctx context.Context, identity, taskID string) (*Task, error) {
	return send(ctx, c, "Cancel", idempotent, taskdv1.TaskServiceClient.CancelTask,
		&taskdv1.CancelTaskRequest{Identity: identity, TaskId: taskID}, taskOf)
}

// TriggerEdit is a change to some of a task's triggers: Add are added
// after the others (an unnamed one is named by the server, "#<n>"), Remove
// names triggers to remove (Task.Spec.Triggers shows every name). The
// triggers it does not name keep their names and progress. Revision, when
// not 0, makes the edit conditional on the task's revision (ErrAborted if
// it changed since it was read).
type TriggerEdit struct {
	Add      []Trigger
	Remove   []string
	Revision int64
}

// EditTriggers adds and removes triggers of a task in one write and
// returns the task. Removing every trigger without adding one is
// ErrFailedPrecondition (Cancel the task instead); a name the task has no
// trigger of is ErrInvalidArgument naming remove_triggers[i]. It is not
// retried once it may have reached a node (a second call would add the
// triggers twice, or refuse a name already removed): after ErrUnavailable,
// Get the task before calling again.
func (c *Client) EditTriggers(ctx context.Context, identity, taskID string, e TriggerEdit) (*Task, error) {
	if len(e.Add) == 0 && len(e.Remove) == 0 {
		return nil, invalid("EditTriggers", "add_triggers", "nothing to add or remove")
	}
	req := &taskdv1.UpdateTaskRequest{Identity: identity, TaskId: taskID, RemoveTriggers: e.Remove, Revision: e.Revision}
	for _, t := range e.Add {
		req.AddTriggers = append(req.AddTriggers, t.toProto())
	}
	return send(ctx, c, "EditTriggers", once, taskdv1.TaskServiceClient.UpdateTask,
		req, taskOf)
}

// Update replaces a task's spec, keeping its id and history, and returns
// the task as updated. Start from the Spec of a Get: Identity, Kind, Scope,
// NonDurable and IdempotencyKey must stay as they are (the node refuses a
// change), and Data nil keeps the task's data (a Get's Spec holds the data
// as read, which a run may have replaced since: set it to nil unless you
// mean to replace it). A trigger given with its name keeps its progress.
// Revision, when not 0, makes the update conditional on the task's
// revision (ErrAborted if it changed since it was read). It is not retried
// once it may have reached a node (a conditional update applied twice
// would fail the second time, an unconditional one could overwrite a
// change made in between): after ErrUnavailable, Get the task before
// calling again.
func (c *Client) Update(ctx context.Context, identity, taskID string, spec TaskSpec, revision int64) (*Task, error) {
	req := &taskdv1.UpdateTaskRequest{Identity: identity, TaskId: taskID, Spec: spec.toProto(), Revision: revision}
	return send(ctx, c, "Update", once, taskdv1.TaskServiceClient.UpdateTask,
		req, taskOf)
}

// Delete removes a task in a final state (COMPLETED, DEAD, CANCELED) at
// once, with its run history and idempotency key, instead of waiting for
// the cluster's --retention. A task in another state is
// ErrFailedPrecondition: Cancel it first. It is retried like Cancel; a
// retry that finds the task gone after an attempt whose answer was lost
// returns nil.
func (c *Client) Delete(ctx context.Context, identity, taskID string) error {
	return remove(ctx, c, "Delete", c.apis, taskdv1.TaskServiceClient.DeleteTask,
		&taskdv1.DeleteTaskRequest{Identity: identity, TaskId: taskID})
}

// RunNow asks for one manual run at once; the schedule stays as it was.
// It is not retried once it may have reached a node (a second call could
// make a second run): after an UNAVAILABLE or DEADLINE_EXCEEDED error, look
// at Runs before calling again.
func (c *Client) RunNow(ctx context.Context, identity, taskID string) (*Task, error) {
	return send(ctx, c, "RunNow", once, taskdv1.TaskServiceClient.RunTaskNow,
		&taskdv1.RunTaskNowRequest{Identity: identity, TaskId: taskID}, taskOf)
}

// Runs returns a task's run history, newest first.
func (c *Client) Runs(ctx context.Context, identity, taskID string) ([]Run, error) {
	return send(ctx, c, "Runs", idempotent, taskdv1.TaskServiceClient.ListRuns,
		&taskdv1.ListRunsRequest{Identity: identity, TaskId: taskID},
		func(resp *taskdv1.ListRunsResponse) []Run { return each(resp.GetRuns(), runFromProto) })
}

// Pause stops a task from starting runs, keeping its triggers; what comes
// due meanwhile is handled on Resume by its misfire policy.
func (c *Client) Pause(ctx context.Context, identity, taskID string) (*Task, error) {
	return send(ctx, c, "Pause", idempotent, taskdv1.TaskServiceClient.PauseTask,
		&taskdv1.PauseTaskRequest{Identity: identity, TaskId: taskID}, taskOf)
}

// Resume lifts a Pause.
func (c *Client) Resume(ctx context.Context, identity, taskID string) (*Task, error) {
	return send(ctx, c, "Resume", idempotent, taskdv1.TaskServiceClient.ResumeTask,
		&taskdv1.ResumeTaskRequest{Identity: identity, TaskId: taskID}, taskOf)
}

// PauseIdentity pauses every task of an identity, present and future, and
// returns the pause.
func (c *Client) PauseIdentity(ctx context.Context, identity string) (*Pause, error) {
	return send(ctx, c, "PauseIdentity", idempotent, taskdv1.TaskServiceClient.PauseIdentity,
		&taskdv1.PauseIdentityRequest{Identity: identity}, pauseOf)
}

// ResumeIdentity lifts a PauseIdentity.
func (c *Client) ResumeIdentity(ctx context.Context, identity string) error {
	_, err := send(ctx, c, "ResumeIdentity", idempotent, taskdv1.TaskServiceClient.ResumeIdentity,
		&taskdv1.ResumeIdentityRequest{Identity: identity}, nothing)
	return err
}

// PauseKind pauses every task of a kind in the cluster, present and
// future, and returns the pause.
func (c *Client) PauseKind(ctx context.Context, kind string) (*Pause, error) {
	return send(ctx, c, "PauseKind", idempotent, taskdv1.TaskServiceClient.PauseKind,
		&taskdv1.PauseKindRequest{Kind: kind}, pauseOf)
}

// ResumeKind lifts a PauseKind.
func (c *Client) ResumeKind(ctx context.Context, kind string) error {
	_, err := send(ctx, c, "ResumeKind", idempotent, taskdv1.TaskServiceClient.ResumeKind,
		&taskdv1.ResumeKindRequest{Kind: kind}, nothing)
	return err
}

// Pauses lists the identity and kind pauses in force.
func (c *Client) Pauses(ctx context.Context) ([]Pause, error) {
	return send(ctx, c, "Pauses", idempotent, taskdv1.TaskServiceClient.ListPauses, &taskdv1.ListPausesRequest{},
		func(resp *taskdv1.ListPausesResponse) []Pause { return each(resp.GetPauses(), pauseFromProto) })
}

// Wait returns the task once it is in a final state (COMPLETED, DEAD or
// CANCELED), or ctx's error. It watches the task's events from the
// revision it read (From), so no change is missed, and reads the task
// again after each; should the watch fail, it reads the task every second.
func (c *Client) Wait(ctx context.Context, identity, taskID string) (*Task, error) {
	t, err := c.Get(ctx, identity, taskID)
	if err != nil || t.State.Final() {
		return t, err
	}
	wctx, cancel := context.WithCancel(ctx)
	wake := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, err := range c.Events(wctx, EventFilter{Identity: identity, TaskID: taskID, Cursor: From(t)}) {
			if err != nil {
				return // the poll goes on alone
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	defer func() { cancel(); <-done }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-wake:
		case <-tick.C:
		case <-ctx.Done():
			return nil, wrap("Wait", status.FromContextError(ctx.Err()).Err(), 1)
		}
		t, err := c.Get(ctx, identity, taskID)
		if err != nil || t.State.Final() {
			return t, err
		}
	}
}

// pauseOf is the pause of a response that holds one (nil for no response).
func pauseOf[R interface {
	*P
	GetPause() *taskdv1.Pause
}, P any](r R) *Pause {
	if r == nil {
		return nil
	}
	p := pauseFromProto(r.GetPause())
	return &p
}

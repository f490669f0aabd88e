package grpcapi

import (
	"context"
	"time"

	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// PauseTask pauses one task.
func (a *TaskService) PauseTask(ctx context.Context, req *taskdv1.PauseTaskRequest) (*taskdv1.PauseTaskResponse, error) {
	return onTask(ctx, req, a.node.PauseTask,
		func(t *taskdv1.Task) *taskdv1.PauseTaskResponse { return &taskdv1.PauseTaskResponse{Task: t} })
}

// ResumeTask resumes one task.
func (a *TaskService) ResumeTask(ctx context.Context, req *taskdv1.ResumeTaskRequest) (*taskdv1.ResumeTaskResponse, error) {
	return onTask(ctx, req, a.node.ResumeTask,
		func(t *taskdv1.Task) *taskdv1.ResumeTaskResponse { return &taskdv1.ResumeTaskResponse{Task: t} })
}

// PauseIdentity pauses every task of an identity.
func (a *TaskService) PauseIdentity(ctx context.Context, req *taskdv1.PauseIdentityRequest) (*taskdv1.PauseIdentityResponse, error) {
	p, err := a.node.PauseIdentity(ctx, req.Identity)
	return reply(&taskdv1.PauseIdentityResponse{Pause: p}, err)
}

// ResumeIdentity lifts an identity pause.
func (a *TaskService) ResumeIdentity(ctx context.Context, req *taskdv1.ResumeIdentityRequest) (*taskdv1.ResumeIdentityResponse, error) {
	err := a.node.ResumeIdentity(ctx, req.Identity)
	return reply(&taskdv1.ResumeIdentityResponse{}, err)
}

// PauseKind pauses every task of a kind.
func (a *TaskService) PauseKind(ctx context.Context, req *taskdv1.PauseKindRequest) (*taskdv1.PauseKindResponse, error) {
	p, err := a.node.PauseKind(ctx, req.Kind)
	return reply(&taskdv1.PauseKindResponse{Pause: p}, err)
}

// ResumeKind lifts a kind pause.
func (a *TaskService) ResumeKind(ctx context.Context, req *taskdv1.ResumeKindRequest) (*taskdv1.ResumeKindResponse, error) {
	err := a.node.ResumeKind(ctx, req.Kind)
	return reply(&taskdv1.ResumeKindResponse{}, err)
}

// ListPauses lists the identity and kind pauses.
func (a *TaskService) ListPauses(ctx context.Context, _ *taskdv1.ListPausesRequest) (*taskdv1.ListPausesResponse, error) {
	ps, err := a.node.ListPauses(ctx)
	return reply(&taskdv1.ListPausesResponse{Pauses: ps}, err)
}

// UpdateTask replaces a task's spec, or adds and removes triggers.
func (a *TaskService) UpdateTask(ctx context.Context, req *taskdv1.UpdateTaskRequest) (*taskdv1.UpdateTaskResponse, error) {
	if err := checkTaskRef(req.Identity, req.TaskId); err != nil {
		return nil, err
	}
	var t *taskdv1.Task
	var err error
	if len(req.AddTriggers) > 0 || len(req.RemoveTriggers) > 0 {
		if req.Spec != nil {
			return nil, Status(&taskservice.InvalidArgumentError{Field: "spec",
				Reason: "replaces the whole spec: give either a spec or add_triggers and remove_triggers, not both"})
		}
		t, err = a.node.EditTriggers(ctx, req.Identity, req.TaskId, req.AddTriggers, req.RemoveTriggers, req.Revision)
	} else {
		t, err = a.node.UpdateTask(ctx, req.Identity, req.TaskId, req.Spec, req.Revision)
	}
	if err != nil {
		return nil, Status(err)
	}
	return &taskdv1.UpdateTaskResponse{Task: t}, nil
}

// DeleteTask removes a finished task at once.
func (a *TaskService) DeleteTask(ctx context.Context, req *taskdv1.DeleteTaskRequest) (*taskdv1.DeleteTaskResponse, error) {
	if err := checkTaskRef(req.Identity, req.TaskId); err != nil {
		return nil, err
	}
	err := a.node.DeleteTask(ctx, req.Identity, req.TaskId)
	return reply(&taskdv1.DeleteTaskResponse{}, err)
}

// PreviewTriggers lists coming fire times without scheduling anything.
func (a *TaskService) PreviewTriggers(ctx context.Context, req *taskdv1.PreviewTriggersRequest) (*taskdv1.PreviewTriggersResponse, error) {
	from := time.Now()
	if req.From != nil {
		if err := taskservice.ValidateInstant("from", req.From); err != nil {
			return nil, Status(err)
		}
		from = req.From.AsTime()
	}
	preview := a.node.PreviewTriggers
	if req.TaskId != "" {
		if err := checkTaskID(req.TaskId); err != nil {
			return nil, err
		}
		preview = func(ctx context.Context, triggers []*taskdv1.Trigger, calendars []string, from time.Time, count int) ([]*taskdv1.PreviewFireTime, error) {
			return a.node.PreviewTaskTriggers(ctx, req.TaskId, triggers, calendars, from, count)
		}
	}
	fts, err := preview(ctx, req.Triggers, req.Calendars, from, int(req.Count))
	return reply(&taskdv1.PreviewTriggersResponse{FireTimes: fts}, err)
}

// WatchEvents streams task events.
func (a *TaskService) WatchEvents(req *taskdv1.WatchEventsRequest, stream taskdv1.TaskService_WatchEventsServer) error {
	f := taskservice.EventFilter{Identity: req.Identity, TaskID: req.TaskId, Kind: req.Kind, Node: req.Node, Types: req.Types}
	if req.Identity != "" {
		if err := checkIdentity("identity", req.Identity); err != nil {
			return err
		}
	}
	if req.TaskId != "" {
		if err := checkTaskID(req.TaskId); err != nil {
			return err
		}
	}
	if err := taskservice.ValidateEventFilter(req); err != nil {
		return Status(err)
	}
	err := a.node.WatchEvents(stream.Context(), f, req.Cursor, func(evs []*taskdv1.Event) error {
		return stream.Send(&taskdv1.WatchEventsResponse{Events: evs})
	})
	if err != nil && stream.Context().Err() != nil {
		return status.FromContextError(stream.Context().Err()).Err()
	}
	return Status(err)
}

// CreateCalendar stores a calendar.
func (a *TaskService) CreateCalendar(ctx context.Context, req *taskdv1.CreateCalendarRequest) (*taskdv1.CreateCalendarResponse, error) {
	c, err := a.node.CreateCalendar(ctx, req.Calendar, req.Replace)
	return reply(&taskdv1.CreateCalendarResponse{Calendar: c}, err)
}

// GetCalendar returns a calendar.
func (a *TaskService) GetCalendar(ctx context.Context, req *taskdv1.GetCalendarRequest) (*taskdv1.GetCalendarResponse, error) {
	if err := checkCalendarName(req.Name); err != nil {
		return nil, err
	}
	c, err := a.node.GetCalendar(ctx, req.Name)
	return reply(&taskdv1.GetCalendarResponse{Calendar: c}, err)
}

// ListCalendars lists the calendars.
func (a *TaskService) ListCalendars(ctx context.Context, _ *taskdv1.ListCalendarsRequest) (*taskdv1.ListCalendarsResponse, error) {
	cs, err := a.node.ListCalendars(ctx)
	return reply(&taskdv1.ListCalendarsResponse{Calendars: cs}, err)
}

// DeleteCalendar removes an unused calendar.
func (a *TaskService) DeleteCalendar(ctx context.Context, req *taskdv1.DeleteCalendarRequest) (*taskdv1.DeleteCalendarResponse, error) {
	if err := checkCalendarName(req.Name); err != nil {
		return nil, err
	}
	err := a.node.DeleteCalendar(ctx, req.Name)
	return reply(&taskdv1.DeleteCalendarResponse{}, err)
}

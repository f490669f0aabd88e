package grpcapi

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/calendar"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TaskService serves the taskd.v1 TaskService over a Node. Errors carry
// the status codes of contract §10 (Status): INVALID_ARGUMENT naming the
// field, NOT_FOUND, FAILED_PRECONDITION, UNAVAILABLE when etcd cannot be
// reached (nothing is half-written: every write is one Txn),
// RESOURCE_EXHAUSTED when etcd's space quota is hit.
type TaskService struct {
	taskdv1.UnimplementedTaskServiceServer
	node *taskservice.Node
}

// NewTaskService returns the TaskService of node; register it with
// taskdv1.RegisterTaskServiceServer.
func NewTaskService(node *taskservice.Node) *TaskService { return &TaskService{node: node} }

func checkIdentity(field, id string) error {
	if err := identity.Validate(id); err != nil {
		return status.Error(codes.InvalidArgument, fmt.Sprintf("%s: %s", field, err))
	}
	return nil
}

func checkTaskID(id string) error {
	if !pending.ValidTaskID(id) {
		return status.Error(codes.InvalidArgument, fmt.Sprintf("task_id: %q is not a task id (26 characters of base32)", id))
	}
	return nil
}

// checkTaskRef checks the identity and task id of a request naming one task.
func checkTaskRef(id, taskID string) error {
	if err := checkIdentity("identity", id); err != nil {
		return err
	}
	return checkTaskID(taskID)
}

func checkCalendarName(name string) error {
	if err := calendar.ValidateName(name); err != nil {
		return Status(&taskservice.InvalidArgumentError{Field: "name", Reason: err.Error()})
	}
	return nil
}

// reply is resp, or (err not nil) the Status of err: the end of a handler
// whose node call answered err and what resp is made of.
func reply[R any](resp *R, err error) (*R, error) {
	if err != nil {
		return nil, Status(err)
	}
	return resp, nil
}

// onTask answers a request naming one task: its identity and task id
// checked, do's answer about the task, in the response resp makes of it.
func onTask[T, R any](ctx context.Context, req interface {
	GetIdentity() string
	GetTaskId() string
}, do func(ctx context.Context, id, taskID string) (T, error), resp func(T) *R) (*R, error) {
	if err := checkTaskRef(req.GetIdentity(), req.GetTaskId()); err != nil {
		return nil, err
	}
	v, err := do(ctx, req.GetIdentity(), req.GetTaskId())
	return reply(resp(v), err)
}

// ScheduleTask stores one task.
func (a *TaskService) ScheduleTask(ctx context.Context, req *taskdv1.ScheduleTaskRequest) (*taskdv1.ScheduleTaskResponse, error) {
	if req.Task == nil {
		return nil, status.Error(codes.InvalidArgument, "task: is required")
	}
	out, err := a.node.Schedule(ctx, []*taskdv1.TaskSpec{req.Task})
	if err != nil {
		return nil, Status(specIn(err, func(int) string { return "task" }))
	}
	return &taskdv1.ScheduleTaskResponse{Task: out[0].Task, Existing: out[0].Existing}, nil
}

// ScheduleTasks stores up to 100 tasks.
func (a *TaskService) ScheduleTasks(ctx context.Context, req *taskdv1.ScheduleTasksRequest) (*taskdv1.ScheduleTasksResponse, error) {
	out, err := a.node.Schedule(ctx, req.Tasks)
	if err != nil {
		return nil, Status(specIn(err, func(i int) string { return fmt.Sprintf("tasks[%d]", i) }))
	}
	resp := &taskdv1.ScheduleTasksResponse{Tasks: make([]*taskdv1.Task, len(out))}
	for i, s := range out {
		resp.Tasks[i] = s.Task
	}
	return resp, nil
}

// GetTask returns one task.
func (a *TaskService) GetTask(ctx context.Context, req *taskdv1.GetTaskRequest) (*taskdv1.GetTaskResponse, error) {
	return onTask(ctx, req, a.node.GetTask,
		func(t *taskdv1.Task) *taskdv1.GetTaskResponse { return &taskdv1.GetTaskResponse{Task: t} })
}

// ListTasks returns a page of tasks: of one identity, or of the cluster.
func (a *TaskService) ListTasks(ctx context.Context, req *taskdv1.ListTasksRequest) (*taskdv1.ListTasksResponse, error) {
	if req.Identity != "" {
		if err := checkIdentity("identity", req.Identity); err != nil {
			return nil, err
		}
	}
	size := int(req.PageSize)
	switch {
	case size == 0:
		size = 100
	case size < 0 || size > 1000:
		return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("page_size: is %d, must be 1-1000 (0 means 100)", size))
	}
	if err := taskservice.ValidateTaskFilter(req); err != nil {
		return nil, Status(err)
	}
	tasks, next, err := a.node.ListTasks(ctx, taskservice.TaskFilter{
		Identity: req.Identity, States: req.States, Kind: req.Kind, Labels: req.Labels, Node: req.Node,
	}, size, req.PageToken)
	if err != nil {
		return nil, Status(err)
	}
	return &taskdv1.ListTasksResponse{Tasks: tasks, NextPageToken: next}, nil
}

// CancelTask cancels a task.
func (a *TaskService) CancelTask(ctx context.Context, req *taskdv1.CancelTaskRequest) (*taskdv1.CancelTaskResponse, error) {
	return onTask(ctx, req, a.node.CancelTask,
		func(t *taskdv1.Task) *taskdv1.CancelTaskResponse { return &taskdv1.CancelTaskResponse{Task: t} })
}

// RunTaskNow requests a manual run.
func (a *TaskService) RunTaskNow(ctx context.Context, req *taskdv1.RunTaskNowRequest) (*taskdv1.RunTaskNowResponse, error) {
	return onTask(ctx, req, a.node.RunTaskNow,
		func(t *taskdv1.Task) *taskdv1.RunTaskNowResponse { return &taskdv1.RunTaskNowResponse{Task: t} })
}

// ListRuns returns a task's history.
func (a *TaskService) ListRuns(ctx context.Context, req *taskdv1.ListRunsRequest) (*taskdv1.ListRunsResponse, error) {
	return onTask(ctx, req, a.node.ListRuns,
		func(runs []*taskdv1.Run) *taskdv1.ListRunsResponse { return &taskdv1.ListRunsResponse{Runs: runs} })
}

// GetIdentity returns an identity's mapping.
func (a *TaskService) GetIdentity(ctx context.Context, req *taskdv1.GetIdentityRequest) (*taskdv1.GetIdentityResponse, error) {
	if err := checkIdentity("identity", req.Identity); err != nil {
		return nil, err
	}
	id, err := a.node.GetIdentity(ctx, req.Identity)
	return reply(&taskdv1.GetIdentityResponse{Identity: id}, err)
}

// ListNodes lists the registered nodes.
func (a *TaskService) ListNodes(ctx context.Context, _ *taskdv1.ListNodesRequest) (*taskdv1.ListNodesResponse, error) {
	nodes, err := a.node.DescribeNodes(ctx)
	return reply(&taskdv1.ListNodesResponse{Nodes: nodes}, err)
}

// MoveIdentity moves an identity to a RUNNING node.
func (a *TaskService) MoveIdentity(ctx context.Context, req *taskdv1.MoveIdentityRequest) (*taskdv1.MoveIdentityResponse, error) {
	if err := checkIdentity("identity", req.Identity); err != nil {
		return nil, err
	}
	if err := taskservice.ValidateNodeName("to_node", req.ToNode); err != nil {
		return nil, Status(err)
	}
	id, err := a.node.MoveIdentity(ctx, req.Identity, req.ToNode)
	return reply(&taskdv1.MoveIdentityResponse{Identity: id}, err)
}

// DrainNode asks a node to drain.
func (a *TaskService) DrainNode(ctx context.Context, req *taskdv1.DrainNodeRequest) (*taskdv1.DrainNodeResponse, error) {
	if err := taskservice.ValidateNodeName("node", req.Node); err != nil {
		return nil, Status(err)
	}
	nd, err := a.node.DrainNode(ctx, req.Node)
	return reply(&taskdv1.DrainNodeResponse{Node: nd}, err)
}

package integration

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// onceAfter is a trigger that fires once after delay (0: now).
func onceAfter(delay time.Duration) []*taskdv1.Trigger {
	o := &taskdv1.OnceTrigger{}
	if delay > 0 {
		o.Delay = durationpb.New(delay)
	}
	return []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: o}}}
}

// every is a periodic trigger with the given interval.
func every(interval time.Duration) []*taskdv1.Trigger {
	return []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{
		Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(interval)},
	}}}
}

// schedule stores spec (scope IDENTITY unless set) and returns the task.
func schedule(t testing.TB, c taskdv1.TaskServiceClient, spec *taskdv1.TaskSpec) *taskdv1.Task {
	t.Helper()
	if spec.Scope == taskdv1.Scope_SCOPE_UNSPECIFIED {
		spec.Scope = taskdv1.Scope_SCOPE_IDENTITY
	}
	ctx, cancel := rpcCtx()
	defer cancel()
	resp, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec})
	if err != nil {
		t.Fatalf("ScheduleTask(%s/%s): %v", spec.GetIdentity(), spec.GetKind(), err)
	}
	return resp.GetTask()
}

// getTask reads one task.
func getTask(c taskdv1.TaskServiceClient, identity, id string) (*taskdv1.Task, error) {
	ctx, cancel := rpcCtx()
	defer cancel()
	resp, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: identity, TaskId: id})
	return resp.GetTask(), err
}

// listRuns reads a task's run history, newest first.
func listRuns(c taskdv1.TaskServiceClient, identity, id string) ([]*taskdv1.Run, error) {
	ctx, cancel := rpcCtx()
	defer cancel()
	resp, err := c.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: identity, TaskId: id})
	return resp.GetRuns(), err
}

// waitTaskState waits until the task is in state and returns it.
func waitTaskState(t testing.TB, c taskdv1.TaskServiceClient, identity, id string, state taskdv1.TaskState) *taskdv1.Task {
	t.Helper()
	var task *taskdv1.Task
	eventually(t, waitLong, fmt.Sprintf("task %s/%s %s", identity, id, state), func() error {
		got, err := getTask(c, identity, id)
		if err != nil {
			return err
		}
		if got.GetState() != state {
			return fmt.Errorf("state %s, run_count %d, last run %v", got.GetState(), got.GetRunCount(), got.GetLastRun())
		}
		task = got
		return nil
	})
	return task
}

// mustListRuns reads a task's run history or fails the test.
func mustListRuns(t testing.TB, c taskdv1.TaskServiceClient, identity, id string) []*taskdv1.Run {
	t.Helper()
	runs, err := listRuns(c, identity, id)
	if err != nil {
		t.Fatalf("ListRuns(%s/%s): %v", identity, id, err)
	}
	return runs
}

// describeRuns renders a run history for a failure message.
func describeRuns(runs []*taskdv1.Run) string {
	s := ""
	for _, r := range runs {
		s += fmt.Sprintf("\n  run %d attempt %d %s recovery=%v manual=%v fence=%s node=%s: %q",
			r.GetRunNumber(), r.GetAttempt(), r.GetOutcome(), r.GetRecovery(), r.GetManual(), r.GetFence(), r.GetNode(), r.GetMessage())
	}
	return s
}

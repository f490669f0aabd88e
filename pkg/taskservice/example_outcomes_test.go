package taskservice_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// scheduleNow stores one task of kind for identity that runs once now.
func scheduleNow(ctx context.Context, node *taskservice.Node, spec *taskdv1.TaskSpec) *taskdv1.Task {
	spec.Scope = taskdv1.Scope_SCOPE_IDENTITY
	spec.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}}
	s, err := node.Schedule(ctx, []*taskdv1.TaskSpec{spec})
	if err != nil {
		panic(err)
	}
	return s[0].Task
}

// A handler's error is retried after the task's backoff (Retry says so
// explicitly); when max_attempts are used up the task is DEAD, kept with
// its runs for inspection.
func ExampleRetry() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, stop := tst.ExampleNode(taskservice.Config{
		Handlers: map[string]taskservice.Handler{
			"charge": taskservice.HandlerFunc(func(ctx context.Context, run *taskservice.Run) error {
				return taskservice.Retry(fmt.Errorf("card processor down (attempt %d)", run.Attempt))
			}),
		},
	})
	defer stop()

	task := scheduleNow(ctx, node, &taskdv1.TaskSpec{
		Identity:    "alice",
		Kind:        "charge",
		MaxAttempts: 2,
		Backoff:     &taskdv1.Backoff{Initial: durationpb.New(10 * time.Millisecond), Max: durationpb.New(10 * time.Millisecond)},
	})
	task, err := tst.WaitFinal(ctx, node, "alice", task.Id)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, "runs:", task.RunCount)
	fmt.Println(task.LastRun.Outcome, task.LastRun.Message)
	// Output:
	// TASK_STATE_DEAD runs: 2
	// OUTCOME_ERROR card processor down (attempt 2)
}

// Permanent says no retry can help: the run is an ERROR that uses no more
// attempts, and a task with no fire time left is DEAD.
func ExamplePermanent() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, stop := tst.ExampleNode(taskservice.Config{
		Handlers: map[string]taskservice.Handler{
			"import": taskservice.HandlerFunc(func(ctx context.Context, run *taskservice.Run) error {
				return taskservice.Permanent(errors.New("no such file: " + string(run.Payload)))
			}),
		},
	})
	defer stop()

	task := scheduleNow(ctx, node, &taskdv1.TaskSpec{Identity: "bob", Kind: "import", Payload: []byte("a.csv"), MaxAttempts: 5})
	task, err := tst.WaitFinal(ctx, node, "bob", task.Id)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, "runs:", task.RunCount)
	fmt.Println(task.LastRun.Outcome, task.LastRun.Message)
	// Output:
	// TASK_STATE_DEAD runs: 1
	// OUTCOME_ERROR no such file: a.csv
}

// Snooze runs the same fire time again later without using an attempt:
// here the handler waits for a resource that is busy on the first run.
func ExampleSnooze() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, stop := tst.ExampleNode(taskservice.Config{
		Handlers: map[string]taskservice.Handler{
			"export": taskservice.HandlerFunc(func(ctx context.Context, run *taskservice.Run) error {
				if run.RunNumber == 1 {
					return taskservice.Snooze(time.Now().Add(20 * time.Millisecond)) // busy: again soon
				}
				run.SetMessage(fmt.Sprintf("exported on run %d, attempt %d", run.RunNumber, run.Attempt))
				return nil
			}),
		},
	})
	defer stop()

	task := scheduleNow(ctx, node, &taskdv1.TaskSpec{Identity: "carol", Kind: "export", MaxAttempts: 1})
	task, err := tst.WaitFinal(ctx, node, "carol", task.Id)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, task.LastRun.Message)
	// Output: TASK_STATE_COMPLETED exported on run 2, attempt 1
}

// Cancel ends a task from its handler: the run is CANCELED and so is the
// task, whatever triggers it has left.
func ExampleCancel() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, stop := tst.ExampleNode(taskservice.Config{
		Handlers: map[string]taskservice.Handler{
			"remind": taskservice.HandlerFunc(func(ctx context.Context, run *taskservice.Run) error {
				return taskservice.Cancel("the user unsubscribed")
			}),
		},
	})
	defer stop()

	s, err := node.Schedule(ctx, []*taskdv1.TaskSpec{{
		Identity: "dave",
		Kind:     "remind",
		Scope:    taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(10 * time.Millisecond)}}}},
	}})
	if err != nil {
		panic(err)
	}
	task, err := tst.WaitFinal(ctx, node, "dave", s[0].Task.Id)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, "runs:", task.RunCount)
	fmt.Println(task.LastRun.Outcome, task.LastRun.Message)
	// Output:
	// TASK_STATE_CANCELED runs: 1
	// OUTCOME_CANCELED the user unsubscribed
}

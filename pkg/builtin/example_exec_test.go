//go:build unix

package builtin_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/pkg/builtin"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// runOnce schedules a task of kind for identity that runs once now, with
// at most maxAttempts attempts 10 ms apart, and returns it once final.
func runOnce(ctx context.Context, node *taskservice.Node, identity, kind, payload string, maxAttempts int32) *taskdv1.Task {
	s, err := node.Schedule(ctx, []*taskdv1.TaskSpec{{
		Identity:    identity,
		Kind:        kind,
		Scope:       taskdv1.Scope_SCOPE_IDENTITY,
		Payload:     []byte(payload),
		MaxAttempts: maxAttempts,
		Backoff:     &taskdv1.Backoff{Initial: durationpb.New(10 * time.Millisecond), Max: durationpb.New(10 * time.Millisecond)},
		Triggers:    []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}},
	}})
	if err != nil {
		panic(err)
	}
	t, err := tst.WaitFinal(ctx, node, identity, s[0].Task.Id)
	if err != nil {
		panic(err)
	}
	return t
}

// Run a shell command per run: the payload is its stdin, the run is
// described by TASKD_* variables, and its stdout is the run's message.
func ExampleNewExec() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, stop := tst.ExampleNode(taskservice.Config{
		Handlers: map[string]taskservice.Handler{
			"greet": builtin.NewExec(`echo "hello $TASKD_IDENTITY, run $TASKD_RUN: $(cat)"`, builtin.ExecOptions{}),
		},
	})
	defer stop()

	task := runOnce(ctx, node, "alice", "greet", "welcome aboard", 1)
	fmt.Println(task.State, task.LastRun.Outcome)
	fmt.Println(task.LastRun.Message)
	// Output:
	// TASK_STATE_COMPLETED OUTCOME_SUCCESS
	// hello alice, run 1: welcome aboard
}

// The exit code of an exec command decides the outcome: 0 is a success,
// most others a failed attempt that is retried up to max_attempts (then
// the task is DEAD), and three have a meaning of their own:
// $TASKD_EXIT_PERMANENT (90) fails without a retry, $TASKD_EXIT_CANCEL (91)
// cancels the task, and $TASKD_EXIT_SNOOZE (92) runs the same fire time
// again after the duration on the last line of stdout (at least
// taskservice.MinSnooze) without using an attempt.
func ExampleNewExec_exitCodes() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, stop := tst.ExampleNode(taskservice.Config{
		Handlers: map[string]taskservice.Handler{
			"flaky":  builtin.NewExec(`echo "timed out" >&2; exit 3`, builtin.ExecOptions{}),
			"import": builtin.NewExec(`echo "no file" >&2; exit "$TASKD_EXIT_PERMANENT"`, builtin.ExecOptions{}),
			"remind": builtin.NewExec(`echo "unsubscribed"; exit "$TASKD_EXIT_CANCEL"`, builtin.ExecOptions{}),
		},
	})
	defer stop()

	for _, kind := range []string{"flaky", "import", "remind"} {
		task := runOnce(ctx, node, "bob", kind, "", 3)
		fmt.Println(kind, task.State, "runs:", task.RunCount, task.LastRun.Outcome)
	}
	// Output:
	// flaky TASK_STATE_DEAD runs: 3 OUTCOME_ERROR
	// import TASK_STATE_DEAD runs: 1 OUTCOME_ERROR
	// remind TASK_STATE_CANCELED runs: 1 OUTCOME_CANCELED
}

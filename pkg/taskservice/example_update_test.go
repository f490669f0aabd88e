package taskservice_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Change a task's settings: read it, edit a copy of its spec and write it
// back with UpdateTask. The revision read makes the write conditional, so
// a change made by someone else in between is not overwritten (ErrConflict).
// Triggers kept by name keep their progress.
func ExampleNode_UpdateTask() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, stop := tst.ExampleNode(taskservice.Config{
		Handlers: map[string]taskservice.Handler{
			"digest": taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil }),
		},
	})
	defer stop()

	s, err := node.Schedule(ctx, []*taskdv1.TaskSpec{{
		Identity:    "erin",
		Kind:        "digest",
		Scope:       taskdv1.Scope_SCOPE_IDENTITY,
		Payload:     []byte("weekly"),
		MaxAttempts: 3,
		Triggers:    []*taskdv1.Trigger{{Name: "monday", Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 8 ? * MON"}}}},
	}})
	if err != nil {
		panic(err)
	}
	task := s[0].Task

	spec := proto.Clone(task.Spec).(*taskdv1.TaskSpec)
	spec.Payload = []byte("daily")
	spec.MaxAttempts = 5
	spec.Labels = map[string]string{"plan": "pro"}
	updated, err := node.UpdateTask(ctx, "erin", task.Id, spec, task.Revision)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(updated.Spec.Payload), updated.Spec.MaxAttempts, updated.Spec.Labels["plan"], updated.Spec.Triggers[0].Name)

	_, err = node.UpdateTask(ctx, "erin", task.Id, spec, task.Revision) // the revision read before the update
	fmt.Println(errors.Is(err, taskservice.ErrConflict))
	// Output:
	// daily 5 pro monday
	// true
}

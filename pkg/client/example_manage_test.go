package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskd/taskd/pkg/client"
)

// Pause a task, keeping its triggers, and resume it: a run that came due
// meanwhile is handled by the misfire policy on Resume (once-now, the
// default of a one-shot trigger, runs it then).
func ExampleClient_Pause() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	task, _, err := c.Schedule(ctx, client.TaskSpec{
		Identity: "kate",
		Kind:     "report",
		Scope:    client.ScopeIdentity,
		Triggers: []client.Trigger{client.After(time.Hour)},
	})
	if err != nil {
		panic(err)
	}
	task, err = c.Pause(ctx, "kate", task.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, task.Paused)
	task, err = c.Resume(ctx, "kate", task.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, task.Paused)
	if _, err := c.Cancel(ctx, "kate", task.ID); err != nil {
		panic(err)
	}
	// Output:
	// PAUSED true
	// SCHEDULED false
}

// Pause every task of a kind in the cluster, present and future (a
// downstream system is down, say): a task scheduled meanwhile waits,
// paused, and runs once the kind is resumed.
func ExampleClient_PauseKind() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	if _, err := c.PauseKind(ctx, "email"); err != nil {
		panic(err)
	}
	task, _, err := c.Schedule(ctx, client.TaskSpec{
		Identity: "liam",
		Kind:     "email",
		Scope:    client.ScopeIdentity,
		Payload:  []byte("hello"),
	})
	if err != nil {
		panic(err)
	}
	task, err = c.Get(ctx, "liam", task.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, task.PausedBy, task.RunCount)
	if err := c.ResumeKind(ctx, "email"); err != nil {
		panic(err)
	}
	task, err = c.Wait(ctx, "liam", task.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, task.RunCount)
	// Output:
	// PAUSED [kind] 0
	// COMPLETED 1
}

// Delete a finished task at once, with its run history and idempotency
// key, instead of waiting for the cluster's retention. A task that may
// still run must be cancelled first.
func ExampleClient_Delete() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	task, _, err := c.Schedule(ctx, client.TaskSpec{
		Identity: "mia",
		Kind:     "report",
		Scope:    client.ScopeIdentity,
		Triggers: []client.Trigger{client.After(time.Hour)},
	})
	if err != nil {
		panic(err)
	}
	err = c.Delete(ctx, "mia", task.ID)
	fmt.Println(errors.Is(err, client.ErrFailedPrecondition))
	if _, err := c.Cancel(ctx, "mia", task.ID); err != nil {
		panic(err)
	}
	if err := c.Delete(ctx, "mia", task.ID); err != nil {
		panic(err)
	}
	_, err = c.Get(ctx, "mia", task.ID)
	fmt.Println(errors.Is(err, client.ErrNotFound))
	// Output:
	// true
	// true
}

// Schedule many tasks in one request (up to client.MaxBatch): the tasks
// come back in the order given, and all are stored or none.
func ExampleClient_ScheduleMany() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	var specs []client.TaskSpec
	for _, who := range []string{"nina", "omar", "paul"} {
		specs = append(specs, client.TaskSpec{
			Identity: who,
			Kind:     "email",
			Scope:    client.ScopeIdentity,
			Payload:  []byte("newsletter"),
		})
	}
	tasks, err := c.ScheduleMany(ctx, specs)
	if err != nil {
		panic(err)
	}
	for _, t := range tasks {
		t, err := c.Wait(ctx, t.Spec.Identity, t.ID)
		if err != nil {
			panic(err)
		}
		fmt.Println(t.State, t.LastRun.Message)
	}
	// Output:
	// COMPLETED sent "newsletter" to nina
	// COMPLETED sent "newsletter" to omar
	// COMPLETED sent "newsletter" to paul
}

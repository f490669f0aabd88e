package client_test

import (
	"context"
	"fmt"
	"time"

	"github.com/taskd/taskd/pkg/client"
)

// Run a task once, a delay after it is stored: a reminder in 100 ms.
func Example_after() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	task, _, err := c.Schedule(ctx, client.TaskSpec{
		Identity: "gina",
		Kind:     "report",
		Scope:    client.ScopeIdentity,
		Triggers: []client.Trigger{client.After(100 * time.Millisecond)},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, task.RunCount)
	task, err = c.Wait(ctx, "gina", task.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, task.RunCount, task.LastRun.Outcome)
	// Output:
	// SCHEDULED 0
	// COMPLETED 1 SUCCESS
}

// Run a task once at a given time. A time already past runs at once (the
// default misfire policy of a one-shot trigger is once-now).
func Example_at() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	at := client.At(time.Now().Add(100 * time.Millisecond))
	at.Name = "soon"
	task, _, err := c.Schedule(ctx, client.TaskSpec{
		Identity: "hank",
		Kind:     "report",
		Scope:    client.ScopeIdentity,
		Triggers: []client.Trigger{at},
	})
	if err != nil {
		panic(err)
	}
	if _, err := c.Wait(ctx, "hank", task.ID); err != nil {
		panic(err)
	}
	runs, err := c.Runs(ctx, "hank", task.ID)
	if err != nil {
		panic(err)
	}
	for _, r := range runs {
		fmt.Println("run", r.RunNumber, r.Outcome, "by trigger", r.TriggerName)
	}
	// Output: run 1 SUCCESS by trigger soon
}

// A task with no trigger runs once, now.
func Example_noTrigger() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	task, _, err := c.Schedule(ctx, client.TaskSpec{
		Identity: "iris",
		Kind:     "email",
		Scope:    client.ScopeIdentity,
		Payload:  []byte("your invoice"),
	})
	if err != nil {
		panic(err)
	}
	task, err = c.Wait(ctx, "iris", task.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, task.RunCount, task.LastRun.Message)
	// Output: COMPLETED 1 sent "your invoice" to iris
}

// Add a trigger to a task and remove another, by name, in one write; the
// trigger left alone keeps its name and its progress.
func ExampleClient_EditTriggers() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	morning := client.Cron("0 0 8 * * ?", "UTC")
	morning.Name = "morning"
	noon := client.Cron("0 0 12 * * ?", "UTC")
	noon.Name = "noon"
	task, _, err := c.Schedule(ctx, client.TaskSpec{
		Identity: "jack",
		Kind:     "report",
		Scope:    client.ScopeIdentity,
		Triggers: []client.Trigger{morning, noon},
	})
	if err != nil {
		panic(err)
	}
	evening := client.Cron("0 0 18 * * ?", "UTC")
	evening.Name = "evening"
	task, err = c.EditTriggers(ctx, "jack", task.ID, client.TriggerEdit{
		Add:      []client.Trigger{evening},
		Remove:   []string{"noon"},
		Revision: task.Revision, // unless someone changed it since
	})
	if err != nil {
		panic(err)
	}
	for _, t := range task.Spec.Triggers {
		fmt.Println(t.Name, t.Cron)
	}
	if _, err := c.Cancel(ctx, "jack", task.ID); err != nil {
		panic(err)
	}
	// Output:
	// morning 0 0 8 * * ?
	// evening 0 0 18 * * ?
}

package client_test

import (
	"context"
	"fmt"
	"time"

	"github.com/taskd/taskd/pkg/client"
)

// Schedule a one-shot task for an identity and wait for its result.
func Example_oneShot() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	task, _, err := c.Schedule(ctx, client.TaskSpec{
		Identity: "alice",
		Kind:     "email",
		Scope:    client.ScopeIdentity,
		Triggers: []client.Trigger{client.Now()},
		Payload:  []byte("welcome"),
	})
	if err != nil {
		panic(err)
	}
	done, err := c.Wait(ctx, "alice", task.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(done.State, done.LastRun.Outcome, done.LastRun.Message)
	// Output: COMPLETED WARNING sent "welcome" to alice
}

// Schedule a periodic task: three runs 100 ms apart, then look at its
// history.
func Example_periodic() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	every := client.Every(100 * time.Millisecond)
	every.Count = 3
	task, _, err := c.Schedule(ctx, client.TaskSpec{
		Identity: "bob",
		Kind:     "report",
		Scope:    client.ScopeIdentity,
		Triggers: []client.Trigger{every},
		Labels:   map[string]string{"team": "billing"},
	})
	if err != nil {
		panic(err)
	}
	if _, err := c.Wait(ctx, "bob", task.ID); err != nil {
		panic(err)
	}
	runs, err := c.Runs(ctx, "bob", task.ID)
	if err != nil {
		panic(err)
	}
	for _, r := range runs { // newest first
		fmt.Println("run", r.RunNumber, r.Outcome)
	}
	// Output:
	// run 3 SUCCESS
	// run 2 SUCCESS
	// run 1 SUCCESS
}

// Schedule a cron task in a time zone, read its coming fire times, and
// cancel it.
func Example_cron() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	task, _, err := c.Schedule(ctx, client.TaskSpec{
		Identity: "carol",
		Kind:     "report",
		Scope:    client.ScopeIdentity,
		Triggers: []client.Trigger{client.Cron("0 30 9 ? * MON-FRI", "Europe/Berlin")},
		Misfire:  client.MisfireSkip,
	})
	if err != nil {
		panic(err)
	}
	task, err = c.Get(ctx, "carol", task.ID)
	if err != nil {
		panic(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for i, t := range task.NextFireTimes {
		if i > 0 {
			fmt.Print(" ")
		}
		fmt.Print(t.In(berlin).Format("15:04"))
	}
	fmt.Println()
	task, err = c.Cancel(ctx, "carol", task.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State)
	// Output:
	// 09:30 09:30 09:30 09:30 09:30
	// CANCELED
}

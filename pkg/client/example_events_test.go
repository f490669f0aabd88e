package client_test

import (
	"context"
	"fmt"
	"time"

	"github.com/taskd/taskd/pkg/client"
)

// Watch a task's events as they happen. From(task) starts the watch at the
// write that stored the task, so nothing after Schedule is missed; a
// broken stream is resumed from the last event's cursor by the iterator.
func Example_events() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	task, _, err := c.Schedule(ctx, client.TaskSpec{
		Identity: "dave",
		Kind:     "report",
		Scope:    client.ScopeIdentity,
		Triggers: []client.Trigger{client.After(50 * time.Millisecond)},
	})
	if err != nil {
		panic(err)
	}
	filter := client.EventFilter{Identity: "dave", TaskID: task.ID, Cursor: client.From(task)}
	for e, err := range c.Events(ctx, filter) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.Type, e.RunNumber)
		if e.Type == "FINALIZED" {
			break
		}
	}
	// Output:
	// SCHEDULED 0
	// FIRED 1
	// STARTED 1
	// SUCCEEDED 1
	// FINALIZED 1
}

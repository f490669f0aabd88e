package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskd/taskd/pkg/client"
)

// Make your own retries safe with an idempotency key: the same key for the
// same identity returns the first task (existing is true), so an order
// charged twice by an impatient caller still runs once. A refused request
// names its field, and errors.Is tells the kinds of error apart.
func Example_retry() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint},
		client.WithCallTimeout(5*time.Second),                     // each attempt
		client.WithRetries(5, 50*time.Millisecond, 2*time.Second), // after UNAVAILABLE or a timeout
	)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	spec := client.TaskSpec{
		Identity:       "erin",
		Kind:           "email",
		Scope:          client.ScopeIdentity,
		Triggers:       []client.Trigger{client.After(time.Hour)},
		IdempotencyKey: "order-1234",
	}
	first, existing, err := c.Schedule(ctx, spec)
	if err != nil {
		panic(err)
	}
	fmt.Println("first call, existing:", existing)
	again, existing, err := c.Schedule(ctx, spec) // the caller retries
	if err != nil {
		panic(err)
	}
	fmt.Println("second call, existing:", existing, "same task:", again.ID == first.ID)

	spec.Scope = "" // every task states where it runs
	spec.IdempotencyKey = ""
	_, _, err = c.Schedule(ctx, spec)
	fmt.Println(errors.Is(err, client.ErrInvalidArgument))
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Message)
	}
	// Output:
	// first call, existing: false
	// second call, existing: true same task: true
	// true
	// InvalidArgument task.scope: is required: SCOPE_IDENTITY (once in the cluster) or SCOPE_EVERY_NODE (on every node)
}

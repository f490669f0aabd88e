package client_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/taskd/taskd/pkg/client"
)

// Serve a kind from your own process: a Worker connects to every node of
// the cluster, and whichever node owns an identity hands it that
// identity's runs of the kind. Each run carries its run number and fence;
// the outcome, the message and new data go back to the node, which
// commits them only while it still owns the identity.
func Example_worker() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{endpoint})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	w := c.NewWorker(client.WorkerOptions{Name: "thumbnailer", Concurrency: 8})
	w.Handle("thumbnail", func(ctx context.Context, job *client.Job) error {
		if len(job.Payload) == 0 {
			return client.Permanent(fmt.Errorf("no image named")) // not retried
		}
		job.SetData(append(job.Data, '+'))
		job.SetMessage(fmt.Sprintf("thumbnail of %s (run %d)", job.Payload, job.RunNumber))
		return nil // any other error is retried after the task's backoff
	})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	select { // the kind can be scheduled once the worker serves a node
	case <-w.Ready():
	case <-ctx.Done():
		panic(ctx.Err())
	}
	task, _, err := c.Schedule(ctx, client.TaskSpec{
		Identity: "frank",
		Kind:     "thumbnail",
		Scope:    client.ScopeIdentity,
		Triggers: []client.Trigger{client.Now()},
		Payload:  []byte("cat.png"),
	})
	if err != nil {
		panic(err)
	}
	task, err = c.Wait(ctx, "frank", task.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.State, task.LastRun.Message, bytes.Equal(task.Proto.GetSpec().GetData(), []byte("+")))
	// Output: COMPLETED thumbnail of cat.png (run 1) true
}

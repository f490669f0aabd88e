package taskservice_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/taskd/taskd/pkg/etcdembed"
	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// An application embeds a node, registers a Go handler by kind, schedules a
// task for an identity and sees it run.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	etcd, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0", Fast: true})
	if err != nil {
		panic(err)
	}
	defer etcd.Close()
	cli, err := taskservice.DialEtcd([]string{etcd.ClientURL()})
	if err != nil {
		panic(err)
	}
	defer cli.Close()

	done := make(chan string, 1)
	node, err := taskservice.New(taskservice.Config{
		Name:   "example",
		Client: cli,
		Handlers: map[string]taskservice.Handler{
			"greet": taskservice.HandlerFunc(func(ctx context.Context, run *taskservice.Run) error {
				// run.Fence (epoch.revision) identifies this run to downstream systems.
				done <- fmt.Sprintf("hello %s, run %d, payload %s", run.Identity, run.RunNumber, run.Payload)
				return nil
			}),
		},
	})
	if err != nil {
		panic(err)
	}
	if err := node.Start(ctx); err != nil {
		panic(err)
	}
	defer node.Stop(ctx)

	_, err = node.Schedule(ctx, []*taskdv1.TaskSpec{{
		Identity: "alice",
		Kind:     "greet",
		Scope:    taskdv1.Scope_SCOPE_IDENTITY,
		Payload:  []byte("hi"),
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}},
	}})
	if err != nil {
		panic(err)
	}
	select {
	case msg := <-done:
		fmt.Println(msg)
	case <-time.After(10 * time.Second):
		fmt.Println("no run")
	}
	// Output: hello alice, run 1, payload hi
}

package taskservice_test

import (
	"context"
	"fmt"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// An on-start-up trigger fires once for every start of the node that runs
// the task (and once when it is scheduled on a running node): warm a cache,
// re-register with a directory. Such a task never completes by itself.
func ExampleNode_Start_onStartup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	etcd := tst.StartExampleEtcd()
	defer etcd.Close()
	runs := make(chan int64, 10)
	cfg := taskservice.Config{
		Name: "web-1",
		Handlers: map[string]taskservice.Handler{
			"warm-cache": taskservice.HandlerFunc(func(_ context.Context, run *taskservice.Run) error {
				runs <- run.RunNumber
				return nil
			}),
		},
	}
	wait := func() {
		select {
		case n := <-runs:
			fmt.Println("run", n)
		case <-ctx.Done():
			panic(ctx.Err())
		}
	}

	node := etcd.StartNode(cfg)
	_, err := node.Schedule(ctx, []*taskdv1.TaskSpec{{
		Identity: "cache",
		Kind:     "warm-cache",
		Scope:    taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}}},
	}})
	if err != nil {
		panic(err)
	}
	wait()
	if err := node.Stop(ctx); err != nil {
		panic(err)
	}

	node = etcd.StartNode(cfg) // the next start of the node
	defer node.Stop(ctx)
	wait()
	// Output:
	// run 1
	// run 2
}

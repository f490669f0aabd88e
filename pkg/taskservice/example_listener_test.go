package taskservice_test

import (
	"context"
	"fmt"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Follow what the node does with a listener: it is told the steps of the
// runs this node makes, in order for each task, on the node's own
// goroutines, so it hands them on without blocking. (WatchEvents streams
// the whole cluster's events, SCHEDULED among them.)
func ExampleListener() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := make(chan taskservice.Event, 100)
	node, stop := tst.ExampleNode(taskservice.Config{
		Handlers: map[string]taskservice.Handler{
			"report": taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil }),
		},
		Listeners: []taskservice.Listener{func(e taskservice.Event) {
			if e.Identity == "frank" {
				events <- e
			}
		}},
	})
	defer stop()

	scheduleNow(ctx, node, &taskdv1.TaskSpec{Identity: "frank", Kind: "report"})
	for {
		select {
		case e := <-events:
			fmt.Println(e.Type, e.RunNumber)
			if e.Type == taskservice.EventFinalized {
				return
			}
		case <-ctx.Done():
			panic(ctx.Err())
		}
	}
	// Output:
	// FIRED 1
	// STARTED 1
	// SUCCEEDED 1
	// FINALIZED 1
}

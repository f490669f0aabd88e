// Command testworker is a remote worker for the integration tests: a real
// process, built on pkg/client's Worker, that serves every node of a
// cluster and reports what it does on stdout, one line each:
//
//	start <identity> <task> <run> <attempt> <fence> <node>
//	ack <node> <run-id> accepted|refused <reason>
//
// Kinds: "count" succeeds at once; "work" takes 100 ms (or until its
// context ends), so that a worker killed under load has runs in flight;
// "hold" blocks in the first execution of
// run 1 (attempt 1, not a recovery) until its context ends, and succeeds
// at once in any other, so a test can kill or fence a worker mid-run and
// see the run's next execution finish.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/taskd/taskd/pkg/client"
)

func main() {
	target := flag.String("target", "", "comma-separated gRPC addresses of nodes to discover the cluster from")
	name := flag.String("name", "testworker", "worker name")
	concurrency := flag.Int("concurrency", 4, "jobs at once, per node")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, strings.Split(*target, ","), *name, *concurrency); err != nil {
		fmt.Fprintln(os.Stderr, "testworker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, targets []string, name string, concurrency int) error {
	c, err := client.New(ctx, targets)
	if err != nil {
		return err
	}
	defer c.Close()
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	w := c.NewWorker(client.WorkerOptions{
		Name: name, Concurrency: concurrency, Discover: 200 * time.Millisecond,
		Logger: hclog.New(&hclog.LoggerOptions{Name: name, Output: os.Stderr, Level: hclog.Info}),
		OnAck: func(a client.Ack) {
			verdict := "accepted"
			if !a.Accepted {
				verdict = "refused"
			}
			say("ack %s %s %s %s", a.Node, a.RunID, verdict, a.Reason)
		},
	})
	started := func(j *client.Job) {
		say("start %s %s %d %d %s %s", j.Identity, j.TaskID, j.RunNumber, j.Attempt, j.Fence, j.Node)
	}
	w.Handle("count", func(_ context.Context, j *client.Job) error {
		started(j)
		return nil
	})
	w.Handle("work", func(ctx context.Context, j *client.Job) error {
		started(j)
		select {
		case <-time.After(100 * time.Millisecond): // the work itself
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	w.Handle("hold", func(ctx context.Context, j *client.Job) error {
		started(j)
		if j.RunNumber == 1 && j.Attempt == 1 && !j.Recovery {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	return w.Run(ctx)
}

package workers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/client"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// BenchmarkThroughput runs b.N no-op tasks of 1,000 identities, all due
// (scheduled under a kind pause, which is then lifted: the timed part is
// the runs, started, handled and committed), once with an in-process
// handler and once with a Go remote worker connected over loopback gRPC
// to the same kind of node. The ratio of their tasks/s is the cost of the
// worker protocol:
//
//	go test -run '^$' -bench Throughput -benchtime 5000x ./pkg/workers
func BenchmarkThroughput(b *testing.B) {
	for _, remote := range []bool{false, true} {
		name := "handler=in-process"
		if remote {
			name = "handler=remote-worker"
		}
		b.Run(name, func(b *testing.B) {
			etcd := tst.StartEtcd(b)
			var done atomic.Int64
			all := make(chan struct{})
			count := func() {
				if done.Add(1) == int64(b.N) {
					close(all)
				}
			}
			handlers := map[string]taskservice.Handler{}
			if !remote {
				handlers["noop"] = taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { count(); return nil })
			}
			n := startBenchNode(b, etcd.Client(b), handlers)
			c := dialBench(b, n.addr)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			if remote {
				w := c.NewWorker(client.WorkerOptions{Name: "bench", Concurrency: 64})
				w.Handle("noop", func(context.Context, *client.Job) error { count(); return nil })
				wctx, stop := context.WithCancel(ctx)
				wdone := make(chan error, 1)
				go func() { wdone <- w.Run(wctx) }()
				defer func() { stop(); <-wdone }()
				<-w.Ready()
			}
			// Scheduled under a kind pause, so that the timed part is the
			// runs alone: due, started, handled and committed.
			if _, err := c.PauseKind(ctx, "noop"); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i += client.MaxBatch {
				specs := make([]client.TaskSpec, 0, client.MaxBatch)
				for j := i; j < min(i+client.MaxBatch, b.N); j++ {
					specs = append(specs, client.TaskSpec{Identity: fmt.Sprintf("id-%03d", j%1000), Kind: "noop",
						Scope: client.ScopeIdentity, Triggers: []client.Trigger{client.Now()}})
				}
				if _, err := c.ScheduleMany(ctx, specs); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			start := time.Now()
			if err := c.ResumeKind(ctx, "noop"); err != nil {
				b.Fatal(err)
			}
			select {
			case <-all:
			case <-ctx.Done():
				b.Fatalf("%d of %d tasks ran", done.Load(), b.N)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
		})
	}
}

package taskservice_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// BenchmarkRunEndToEnd schedules b.N no-op one-shot tasks due now for 100
// identities (batches of 100) on one node and waits for every commit. etcd
// runs in a child process, so the allocations reported are the node's
// (and its etcd client's) per task: schedule, start, run, commit.
func BenchmarkRunEndToEnd(b *testing.B) {
	url := tst.StartEtcdProcess(b, filepath.Join(b.TempDir(), "etcd"), "http://127.0.0.1:0").URL
	cli, err := taskservice.DialEtcd([]string{url})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cli.Close() })
	var done atomic.Int64
	var want atomic.Int64
	finished := make(chan struct{}, 1)
	noop := taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil })
	n, err := taskservice.New(taskservice.Config{Name: "bench", Client: cli, MaxTxnOps: 1024,
		Handlers: map[string]taskservice.Handler{"noop": noop},
		Listeners: []taskservice.Listener{func(ev taskservice.Event) {
			if ev.Type == taskservice.EventSucceeded && done.Add(1) == want.Load() {
				finished <- struct{}{}
			}
		}}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := n.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = n.Stop(ctx) })
	b.ReportAllocs()
	b.ResetTimer()
	done.Store(0)
	want.Store(int64(b.N))
	for i := 0; i < b.N; i += 100 {
		var specs []*taskdv1.TaskSpec
		for j := i; j < i+100 && j < b.N; j++ {
			specs = append(specs, spec(fmt.Sprintf("id-%03d", j%100), "noop", now()))
		}
		if _, err := n.Schedule(ctx, specs); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-finished:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d runs committed", done.Load(), b.N)
	}
}

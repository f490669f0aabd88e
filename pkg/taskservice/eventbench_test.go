package taskservice_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// BenchmarkEventStreams: the cost of one task's SCHEDULED event carried to
// each of 16 WatchEvents streams of one node over gRPC (the tasks are
// stored in batches of 100 and wait an hour, so that the events are what
// is measured, beside the schedule writes).
func BenchmarkEventStreams(b *testing.B) {
	const streams = 16
	etcd := tst.StartEtcd(b)
	cli := etcd.Client(b)
	node := tst.StartNode(b, cli, taskservice.Config{Name: "n1", LeaseTTL: 2 * time.Second, MaxTxnOps: 1024,
		Handlers: map[string]taskservice.Handler{"rec": &recorder{}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := cli.Get(ctx, "cursor-now")
	if err != nil {
		b.Fatal(err)
	}
	cursor := fmt.Sprintf("%d.%d", resp.Header.Revision, 1<<31-1)
	var got [streams]atomic.Int64
	var wg sync.WaitGroup
	for i := range streams {
		s, err := node.Client.WatchEvents(ctx, &taskdv1.WatchEventsRequest{Cursor: cursor, Types: []taskdv1.EventType{wsScheduled}})
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r, err := s.Recv()
				if err != nil {
					return
				}
				got[i].Add(int64(len(r.Events)))
			}
		}()
	}
	defer wg.Wait()
	defer cancel()
	b.ResetTimer()
	for done := 0; done < b.N; {
		req := &taskdv1.ScheduleTasksRequest{}
		for i := 0; i < 100 && done < b.N; i++ {
			req.Tasks = append(req.Tasks, spec(fmt.Sprintf("bench-%d", done%16), "rec", after(time.Hour)))
			done++
		}
		cctx, ccancel := rpc()
		_, err := node.Client.ScheduleTasks(cctx, req)
		ccancel()
		if err != nil {
			b.Fatal(err)
		}
	}
	tst.Eventually(b, time.Minute, func() bool {
		for i := range got {
			if got[i].Load() < int64(b.N) {
				return false
			}
		}
		return true
	}, "every stream to get %d events", b.N)
	b.StopTimer()
	for i := range got {
		if n := got[i].Load(); n != int64(b.N) {
			b.Fatalf("stream %d got %d events, want %d", i, n, b.N)
		}
	}
}

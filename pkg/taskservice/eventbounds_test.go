package taskservice_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/resume"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// heapInUse is the heap in use after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// cursorNow is a cursor from which a stream starts at etcd's current
// revision.
func cursorNow(t *testing.T, cli *clientv3.Client) string {
	t.Helper()
	ctx, cancel := rpc()
	defer cancel()
	resp, err := cli.Get(ctx, "cursor-now")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d.%d", resp.Header.Revision, 1<<31-1)
}

// follow reads the events after cursor until done says it has them all,
// reconnecting (as a client does) from the cursor a stream that ends
// RESOURCE_EXHAUSTED or UNAVAILABLE carries; it returns the events and how
// many reconnections it took.
func follow(t *testing.T, api taskdv1.TaskServiceClient, cursor string, done func([]*taskdv1.Event) bool) ([]*taskdv1.Event, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var got []*taskdv1.Event
	resumes := 0
	for {
		s, err := api.WatchEvents(ctx, &taskdv1.WatchEventsRequest{Cursor: cursor})
		for err == nil && !done(got) {
			var resp *taskdv1.WatchEventsResponse
			if resp, err = s.Recv(); err == nil {
				got = append(got, resp.Events...)
			}
		}
		if err == nil {
			return got, resumes
		}
		c, ok := resume.Cursor(err)
		if code := status.Code(err); !ok || code != codes.ResourceExhausted && code != codes.Unavailable {
			t.Fatalf("event stream from %s: %v (no cursor to resume from)", cursor, err)
		}
		cursor = c
		resumes++
	}
}

// finalized counts the FINALIZED events, which end each task here.
func finalized(n int) func([]*taskdv1.Event) bool {
	return func(evs []*taskdv1.Event) bool { return countType(evs, wsFinalized) >= n }
}

// sameEvents fails unless got is want, event by event (cursor and type):
// nothing missing, nothing repeated.
func sameEvents(t *testing.T, what string, got, want []*taskdv1.Event) {
	t.Helper()
	for i := 0; i < max(len(got), len(want)); i++ {
		if i >= len(got) || i >= len(want) || got[i].Cursor != want[i].Cursor || got[i].Type != want[i].Type {
			at := func(evs []*taskdv1.Event) string {
				if i < len(evs) {
					return evs[i].Cursor + " " + evs[i].Type.String()
				}
				return "(none)"
			}
			t.Fatalf("%s: event %d is %s, want %s (%d events, want %d)", what, i, at(got), at(want), len(got), len(want))
		}
	}
}

// TestEventStreamStalledReaderIsEndedWithACursor: a WatchEvents reader
// that stops reading while some 40 MB are written costs the node a bounded
// heap (etcd runs in its own process, so the heap measured is the node's,
// the stalled client's and the test's); when it reads again its stream
// ends RESOURCE_EXHAUSTED with a cursor, from which a new stream goes on
// with no event missing or repeated. Until this release the stream's own
// etcd watch buffered every write for it (hundreds of MiB).
func TestEventStreamStalledReaderIsEndedWithACursor(t *testing.T) {
	const tasks = 180
	etcd := tst.StartEtcdProcess(t, filepath.Join(t.TempDir(), "etcd"), "http://127.0.0.1:0")
	cli := etcd.Client(t)
	msg := strings.Repeat("m", 16<<10)
	var finals atomic.Int64
	node := tst.StartNode(t, cli, taskservice.Config{
		Name:     "n1",
		LeaseTTL: 2 * time.Second,
		Handlers: map[string]taskservice.Handler{"fail": taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error {
			return errors.New(msg)
		})},
		Listeners: []taskservice.Listener{func(e taskservice.Event) {
			if e.Type == taskservice.EventFinalized {
				finals.Add(1)
			}
		}},
	})
	// The stalled reader's connection keeps gRPC's initial 64 KiB windows
	// (no growth by bandwidth estimation): a client that stops reading
	// holds no more than that in this process.
	conn, err := grpc.NewClient(node.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c0 := cursorNow(t, cli)
	// The deadline ends a stream that would never end otherwise.
	sctx, scancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer scancel()
	stalled, err := taskdv1.NewTaskServiceClient(conn).WatchEvents(sctx, &taskdv1.WatchEventsRequest{Cursor: c0})
	if err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return node.EventStreams() == 1 }, "the stalled stream to join the node's event watch")
	before := heapInUse()

	payload := make([]byte, 64<<10)
	for i := range tasks {
		s := spec(fmt.Sprintf("stall-%d", i%8), "fail", now())
		s.Payload = payload
		s.MaxAttempts = 1
		ctx, cancel := rpc()
		_, err := node.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
		cancel()
		if err != nil {
			t.Fatalf("schedule %d: %v", i, err)
		}
	}
	tst.Eventually(t, 2*time.Minute, func() bool { return finals.Load() == tasks }, "every task to end (%d of %d)", finals.Load(), tasks)
	ctx, cancel := rpc()
	st, err := cli.Status(ctx, etcd.URL)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	after := heapInUse()
	growth := int64(after) - int64(before)
	t.Logf("stalled reader: heap in use %.1f MiB before, %.1f MiB after %d tasks of a 64 KiB payload and a 16 KiB failure message (etcd's db %.1f MiB): growth %.1f MiB",
		float64(before)/(1<<20), float64(after)/(1<<20), tasks, float64(st.DbSize)/(1<<20), float64(growth)/(1<<20))
	if growth > 64<<20 {
		t.Errorf("the node's heap grew by %.1f MiB for a reader that stopped reading; want a bounded buffer (< 64 MiB)", float64(growth)/(1<<20))
	}

	// The reader reads again: what was sent, then the end with a cursor.
	var delivered []*taskdv1.Event
	for {
		resp, err := stalled.Recv()
		if err != nil {
			if code := grpcCode(err); code != codes.ResourceExhausted {
				t.Fatalf("stalled stream ended with %v, want RESOURCE_EXHAUSTED", err)
			}
			c, ok := resume.Cursor(err)
			if !ok || !strings.Contains(err.Error(), c) {
				t.Fatalf("stalled stream's end %v carries no cursor (detail) or does not name it", err)
			}
			t.Logf("ended after %d events: %v", len(delivered), err)
			rest, resumes := follow(t, node.Client, c, func(evs []*taskdv1.Event) bool {
				return countType(delivered, wsFinalized)+countType(evs, wsFinalized) >= tasks
			})
			all, _ := follow(t, node.Client, c0, finalized(tasks))
			sameEvents(t, "the stalled stream then a stream from its cursor", append(delivered, rest...), all)
			t.Logf("resumed with %d events (%d reconnections); %d events in all", len(rest), resumes, len(all))
			return
		}
		delivered = append(delivered, resp.Events...)
	}
}

func grpcCode(err error) codes.Code { return status.Code(err) }

// countingWatcher keeps the context of every etcd watch opened on each
// key: a watch is open while its context is (a watch that broke and was
// opened again has its old context cancelled).
type countingWatcher struct {
	clientv3.Watcher
	mu   sync.Mutex
	ctxs map[string][]context.Context
}

func (w *countingWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	w.mu.Lock()
	w.ctxs[key] = append(w.ctxs[key], ctx)
	w.mu.Unlock()
	return w.Watcher.Watch(ctx, key, opts...)
}

// open counts the watches of key open now.
func (w *countingWatcher) open(key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ctx := range w.ctxs[key] {
		if ctx.Err() == nil {
			n++
		}
	}
	return n
}

// TestEventStreamsShareOneWatch: many WatchEvents streams of one node,
// each with its own filter, are fed by one etcd watch of the key prefix.
func TestEventStreamsShareOneWatch(t *testing.T) {
	const streams = 16
	etcd := tst.StartEtcd(t)
	cli := etcd.Client(t)
	cw := &countingWatcher{Watcher: cli.Watcher, ctxs: map[string][]context.Context{}}
	cli.Watcher = cw
	rec := &recorder{}
	node := tst.StartNode(t, cli, taskservice.Config{Name: "n1", LeaseTTL: 2 * time.Second,
		Handlers: map[string]taskservice.Handler{"rec": rec}})
	var ws []*watcher
	for i := range streams {
		ws = append(ws, watch(t, node, &taskdv1.WatchEventsRequest{Identity: fmt.Sprintf("share-%d", i)}))
	}
	tst.Eventually(t, 10*time.Second, func() bool { return node.EventStreams() == streams }, "%d streams on the node", streams)
	for i := range streams {
		ctx, cancel := rpc()
		_, err := node.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec(fmt.Sprintf("share-%d", i), "rec", now())})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range ws {
		w.waitFor(t, "the stream's task FINALIZED", func(evs []*taskdv1.Event) bool { return countType(evs, wsFinalized) == 1 })
		for _, e := range w.events() {
			if e.Identity != fmt.Sprintf("share-%d", i) {
				t.Fatalf("stream %d (identity share-%d) got an event of %s", i, i, e.Identity)
			}
		}
	}
	// Open ones, not opened ones: a stream that began ahead of the node's
	// watch (a busy machine) catches up with a watch of its own until it
	// joins the node's, and the node's may break and be opened again.
	tst.Eventually(t, 10*time.Second, func() bool { return cw.open("/taskd/") == 1 },
		"%d streams to be fed by one open etcd watch of the prefix", streams)
}

// TestEventStreamCatchUpJoinsWithoutGapOrRepeat: streams that start from
// an old cursor while tasks keep running read the history, then join the
// node's live watch, with every event once and in order, whether the
// catch-up had to pause for its reader (a small buffer) or not.
func TestEventStreamCatchUpJoinsWithoutGapOrRepeat(t *testing.T) {
	const tasks = 60
	etcd := tst.StartEtcd(t)
	cli := etcd.Client(t)
	rec := &recorder{}
	node := tst.StartNode(t, cli, taskservice.Config{Name: "n1", LeaseTTL: 2 * time.Second, EventBuffer: 2 << 10,
		Handlers: map[string]taskservice.Handler{"rec": rec}})
	c0 := cursorNow(t, cli)
	scheduled := make(chan struct{})
	go func() {
		defer close(scheduled)
		for i := range tasks {
			ctx, cancel := rpc()
			_, err := node.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec(fmt.Sprintf("join-%d", i%4), "rec", now())})
			cancel()
			if err != nil {
				t.Errorf("schedule: %v", err)
				return
			}
		}
	}()
	// Catch-ups begin at different moments of the writes.
	type result struct {
		evs     []*taskdv1.Event
		resumes int
	}
	results := make([]result, 3)
	var wg sync.WaitGroup
	for i := range results {
		tst.Eventually(t, time.Minute, func() bool {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			return len(rec.calls) >= (i+1)*tasks/4
		}, "runs to go on")
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].evs, results[i].resumes = follow(t, node.Client, c0, finalized(tasks))
		}()
	}
	<-scheduled
	wg.Wait()
	var all []*taskdv1.Event
	all, _ = follow(t, node.Client, c0, finalized(tasks))
	for i, r := range results {
		sameEvents(t, fmt.Sprintf("catch-up %d", i), r.evs, all)
		t.Logf("catch-up %d: %d events, %d reconnections", i, len(r.evs), r.resumes)
	}
}

// TestEventStreamEndsWithItsCursorWhenTheNodeStops: a node that stops ends
// its streams UNAVAILABLE with the cursor to go on from on another node.
func TestEventStreamEndsWithItsCursorWhenTheNodeStops(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	w := watch(t, c.nodes["a"], &taskdv1.WatchEventsRequest{Identity: "stop"})
	task := c.schedule("b", spec("stop", "rec", now()))
	w.waitFor(t, "FINALIZED", func(evs []*taskdv1.Event) bool { return countType(evs, wsFinalized) == 1 })
	ctx, cancel := rpc()
	defer cancel()
	if err := c.nodes["a"].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	<-w.done
	evs := w.events()
	cur, ok := resume.Cursor(w.err)
	if grpcCode(w.err) != codes.Unavailable || !ok {
		t.Fatalf("stream of a stopped node ended with %v, want UNAVAILABLE with a cursor", w.err)
	}
	next := c.schedule("b", spec("stop", "rec", now()))
	w2 := watch(t, c.nodes["b"], &taskdv1.WatchEventsRequest{Identity: "stop", Cursor: cur})
	w2.waitFor(t, "the next task's FINALIZED", func(evs []*taskdv1.Event) bool { return countType(evs, wsFinalized) == 1 })
	for _, e := range w2.events() {
		if e.TaskId == task.Id {
			t.Fatalf("event %v of the first task again after cursor %s (last seen %s)", e.Type, cur, evs[len(evs)-1].Cursor)
		}
	}
	if got := w2.types(next.Id); len(got) == 0 || got[0] != wsScheduled {
		t.Fatalf("after the cursor, the next task's events %v, want from SCHEDULED", got)
	}
}

// TestEventStreamsAreBounded: a node serves at most MaxEventStreams
// WatchEvents streams at once (each may hold EventBuffer bytes for its
// reader); one more is refused with RESOURCE_EXHAUSTED, and a place freed
// by a stream that ends is taken again.
func TestEventStreamsAreBounded(t *testing.T) {
	etcd := tst.StartEtcd(t)
	node := tst.StartNode(t, etcd.Client(t), taskservice.Config{Name: "n1", LeaseTTL: 2 * time.Second, MaxEventStreams: 2,
		Handlers: map[string]taskservice.Handler{"rec": &recorder{}}})
	first := watch(t, node, &taskdv1.WatchEventsRequest{})
	watch(t, node, &taskdv1.WatchEventsRequest{})
	tst.Eventually(t, 10*time.Second, func() bool { return node.EventStreams() == 2 }, "2 streams on the node")
	third := watch(t, node, &taskdv1.WatchEventsRequest{})
	<-third.done
	if status.Code(third.err) != codes.ResourceExhausted || !strings.Contains(third.err.Error(), "--max-event-streams") {
		t.Fatalf("third stream ended with %v, want RESOURCE_EXHAUSTED naming --max-event-streams", third.err)
	}
	first.stop()
	tst.Eventually(t, 10*time.Second, func() bool { return node.EventStreams() == 1 }, "the first stream gone")
	again := watch(t, node, &taskdv1.WatchEventsRequest{})
	tst.Eventually(t, 10*time.Second, func() bool { return node.EventStreams() == 2 }, "a new stream in the freed place")
	again.mu.Lock()
	err := again.err
	again.mu.Unlock()
	if err != nil {
		t.Fatalf("a stream in the freed place ended: %v", err)
	}
}

package workers_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/pkg/client"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	"github.com/taskd/taskd/pkg/workers"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// dialConn is a client connection whose flow-control windows are fixed at
// gRPC's minimum, 64 KiB (no BDP growth): a stream that stops reading is
// full after two runs of a 200 KiB payload, as on a real network.
func dialConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// openStream opens a Work stream on cc, ended when the test does.
func openStream(t *testing.T, cc *grpc.ClientConn) (taskdv1.WorkerService_WorkClient, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := taskdv1.NewWorkerServiceClient(cc).Work(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return stream, cancel
}

// hello sends h on stream and returns the node's first answer.
func hello(stream taskdv1.WorkerService_WorkClient, h *taskdv1.WorkerHello) (*taskdv1.WorkResponse, error) {
	if err := stream.Send(&taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Hello{Hello: h}}); err != nil {
		return nil, err
	}
	return stream.Recv()
}

// beat sends a heartbeat on stream every interval until ctx ends or a
// send fails; the returned func stops it and waits.
func beat(stream taskdv1.WorkerService_WorkClient, every time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if stream.Send(&taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Heartbeat{Heartbeat: &taskdv1.WorkerHeartbeat{}}}) != nil {
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// heapInUse is the process's heap in use after a collection, in MiB.
func heapInUse() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// A worker that heartbeats but stops reading its stream: once its
// flow-control window is full, a send to it waits; the node keeps checking
// anyway, cuts it off when a send has waited three heartbeat intervals,
// stops picking it, and retries its runs on a live worker.
func TestWorkerThatStopsReadingIsCutOff(t *testing.T) {
	n, c, ctx := nodeAndClient(t, 200*time.Millisecond)

	before := heapInUse()
	stream, end := openStream(t, dialConn(t, n.addr))
	if m, err := hello(stream, &taskdv1.WorkerHello{Worker: "deaf", Kinds: []string{"big"}, Concurrency: 8}); err != nil || m.GetWelcome() == nil {
		t.Fatalf("hello: %v %v", m, err)
	}
	stopBeats := beat(stream, 50*time.Millisecond) // alive, but it reads nothing more
	defer func() { end(); stopBeats() }()          // a beat blocked on flow control ends with the stream

	payload := bytes.Repeat([]byte("p"), 200<<10)
	var specs []client.TaskSpec
	for i := range 4 {
		specs = append(specs, spec(fmt.Sprintf("deaf-%d", i), "big", func(s *client.TaskSpec) {
			s.Payload = payload
			s.Backoff = client.Backoff{Initial: 50 * time.Millisecond, Max: 100 * time.Millisecond}
		}))
	}
	tasks, err := c.ScheduleMany(ctx, specs)
	if err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 20*time.Second, func() bool {
		st := n.pool.Stats()
		return st.CutOff[workers.CutNotReading] == 1 && st.Workers == 0
	}, "the worker that stopped reading was not cut off: %+v", n.pool.Stats())
	cut := heapInUse()

	w := c.NewWorker(client.WorkerOptions{Name: "live", Concurrency: 4, Discover: 100 * time.Millisecond})
	w.Handle("big", func(_ context.Context, j *client.Job) error {
		if len(j.Payload) != len(payload) {
			return client.Permanent(fmt.Errorf("payload of %d bytes", len(j.Payload)))
		}
		return nil
	})
	runWorker(t, w)
	retried := 0
	for _, task := range tasks {
		done, err := c.Wait(ctx, task.Spec.Identity, task.ID)
		if err != nil || done.State != client.StateCompleted {
			t.Fatalf("task %s: %+v %v", task.ID, done, err)
		}
		runs, err := c.Runs(ctx, task.Spec.Identity, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs[1:] {
			if r.Outcome != "ERROR" || !strings.Contains(r.Message, "went away") || !strings.Contains(r.Message, "read its stream") {
				t.Fatalf("task %s: an earlier run %+v", task.ID, r)
			}
			retried++
		}
	}
	if retried == 0 {
		t.Fatal("no run was retried: none was in flight on the worker that stopped reading")
	}
	t.Logf("heap in use after GC (node, etcd and clients in one process): %.1f MiB before, %.1f MiB once cut off, %.1f MiB after %d runs of %d KiB retried",
		before, cut, heapInUse(), retried, len(payload)>>10)
	if st := n.pool.Stats(); st.CutOff[workers.CutSilent] != 0 || st.CutOff[workers.CutQueueFull] != 0 {
		t.Fatalf("cut-offs %v: the heartbeating worker was cut off as silent or full", st.CutOff)
	}
}

// A worker that sends message after message (each answered) but never
// reads: its queue fills while a send waits for it, and it is cut off at
// once, before that send has waited the cut-off time.
func TestWorkerWhoseQueueIsFullIsCutOff(t *testing.T) {
	etcd := tst.StartEtcd(t)
	n := startNode(t, etcd.Client(t), "n1", 10*time.Second, nil)
	stream, end := openStream(t, dialConn(t, n.addr))
	defer end()
	if m, err := hello(stream, &taskdv1.WorkerHello{Worker: "flood", Kinds: []string{"job"}, Concurrency: 1}); err != nil || m.GetWelcome() == nil {
		t.Fatalf("hello: %v %v", m, err)
	}
	// Each outcome for a run the node does not hold is answered by a
	// refusal: they pile up unread. The flood ends when the stream does (a
	// send blocked on flow control too).
	flooded := make(chan int, 1)
	go func() {
		i := 0
		for ; ; i++ {
			if err := stream.Send(&taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Outcome{Outcome: &taskdv1.WorkOutcome{
				RunId: fmt.Sprintf("no-such-run-%d", i), Result: taskdv1.WorkResult_WORK_RESULT_SUCCESS}}}); err != nil {
				break
			}
		}
		flooded <- i
	}()
	tst.Eventually(t, 20*time.Second, func() bool { return n.pool.Stats().CutOff[workers.CutQueueFull] == 1 },
		"the flooding worker was not cut off: %+v", n.pool.Stats())
	tst.Eventually(t, 10*time.Second, func() bool { return n.pool.Stats().Workers == 0 }, "the flooding worker is still connected")
	if st := n.pool.Stats(); st.CutOff[workers.CutQueueFull] != 1 || st.CutOff[workers.CutNotReading] != 0 {
		t.Fatalf("cut-offs %v, want one for a full queue", st.CutOff)
	}
	end()
	t.Logf("%d outcomes sent unread before the stream ended", <-flooded)
}

// A node serves at most MaxStreams Work streams, counting those that have
// not sent their hello yet; one more is refused with RESOURCE_EXHAUSTED,
// and a stream that ends frees its place.
func TestWorkStreamsAreBounded(t *testing.T) {
	etcd := tst.StartEtcd(t)
	n := startNode(t, etcd.Client(t), "n1", 10*time.Second, nil, func(s *nodeSetup) { s.pool.MaxStreams = 2 })
	cc := dialConn(t, n.addr)
	first, _ := openStream(t, cc)
	if m, err := hello(first, &taskdv1.WorkerHello{Worker: "w1", Kinds: []string{"job"}, Concurrency: 1}); err != nil || m.GetWelcome() == nil {
		t.Fatalf("hello: %v %v", m, err)
	}
	_, endSilent := openStream(t, cc) // no hello yet: it holds a place too
	tst.Eventually(t, 10*time.Second, func() bool { return n.pool.Stats().Streams == 2 }, "streams open: %+v", n.pool.Stats())
	third, _ := openStream(t, cc)
	_, err := hello(third, &taskdv1.WorkerHello{Worker: "w3", Kinds: []string{"job"}, Concurrency: 1})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "--max-worker-streams") {
		t.Fatalf("a third stream: %v, want RESOURCE_EXHAUSTED naming --max-worker-streams", err)
	}
	endSilent()
	tst.Eventually(t, 10*time.Second, func() bool { return n.pool.Stats().Streams == 1 }, "streams open: %+v", n.pool.Stats())
	again, _ := openStream(t, cc)
	if m, err := hello(again, &taskdv1.WorkerHello{Worker: "w4", Kinds: []string{"job"}, Concurrency: 1}); err != nil || m.GetWelcome() == nil {
		t.Fatalf("a stream once one ended: %v %v", m, err)
	}
	if got := n.pool.Workers(); got != 2 {
		t.Fatalf("%d workers, want 2", got)
	}
}

// Workers' kinds go into the node's registration, one etcd Put under its
// lease. 200 workers of 64 kinds of 128 bytes each would make it 1.6 MB,
// over etcd's request limit: the node could not register again after
// losing its lease. The node takes kinds up to taskservice.MaxRemoteKinds,
// refuses a hello that would take it further (RESOURCE_EXHAUSTED naming
// hello.kinds), still takes one whose kinds it serves already, and its
// registration stays small enough to be rewritten after a lease loss.
func TestWorkersKindsCannotOverflowTheRegistration(t *testing.T) {
	etcd := tst.StartEtcd(t)
	cli := etcd.Client(t)
	n := startNode(t, cli, "n1", 10*time.Second, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kindsOf := func(w int) []string {
		kinds := make([]string, workers.MaxKinds)
		for i := range kinds {
			kinds[i] = fmt.Sprintf("w%03d-k%02d-", w, i) + strings.Repeat("x", taskservice.MaxKindLen-9)
		}
		return kinds
	}
	cc := dialConn(t, n.addr)
	const helloes = 200
	var (
		mu       sync.Mutex
		accepted int
		refused  []error
		wg       sync.WaitGroup
	)
	for w := range helloes {
		stream, _ := openStream(t, cc)
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := hello(stream, &taskdv1.WorkerHello{Worker: fmt.Sprintf("w%d", w), Kinds: kindsOf(w), Concurrency: 1})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && m.GetWelcome() != nil:
				accepted++
			default:
				refused = append(refused, err)
			}
		}()
	}
	wg.Wait()
	want := taskservice.MaxRemoteKinds / workers.MaxKinds
	if accepted != want || len(refused) != helloes-want {
		t.Fatalf("%d workers accepted, %d refused; want %d and %d", accepted, len(refused), want, helloes-want)
	}
	for _, err := range refused {
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "hello.kinds:") {
			t.Fatalf("a hello past the node's kinds: %v, want RESOURCE_EXHAUSTED naming hello.kinds", err)
		}
	}
	if got := len(n.pool.Kinds()); got != taskservice.MaxRemoteKinds {
		t.Fatalf("the pool serves %d kinds, want %d", got, taskservice.MaxRemoteKinds)
	}
	// A worker of kinds already served adds none: it is taken.
	served := n.pool.Kinds()[:workers.MaxKinds]
	stream, _ := openStream(t, cc)
	if m, err := hello(stream, &taskdv1.WorkerHello{Worker: "more", Kinds: served, Concurrency: 1}); err != nil || m.GetWelcome() == nil {
		t.Fatalf("a worker of served kinds: %v %v", m, err)
	}

	record := func() (*storev1.NodeRecord, int64, int) {
		gctx, gcancel := context.WithTimeout(ctx, 5*time.Second)
		defer gcancel()
		resp, err := cli.Get(gctx, "/taskd/nodes/n1")
		if err != nil || len(resp.Kvs) != 1 {
			return nil, 0, 0
		}
		var rec storev1.NodeRecord
		if err := proto.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
			t.Fatal(err)
		}
		return &rec, resp.Kvs[0].Lease, len(resp.Kvs[0].Value)
	}
	var lease int64
	tst.Eventually(t, 10*time.Second, func() bool {
		rec, l, _ := record()
		lease = l
		return rec != nil && len(rec.GetKinds()) == taskservice.MaxRemoteKinds
	}, "the registration does not list the workers' kinds")
	_, _, size := record()
	t.Logf("registration with %d kinds of %d bytes: %d bytes", taskservice.MaxRemoteKinds, taskservice.MaxKindLen, size)
	if size > 256<<10 {
		t.Fatalf("registration of %d bytes, over 256 KiB", size)
	}

	// The fault: the node's lease ends under it. It registers again, with
	// the same kinds, and starts runs again (not self-fenced).
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := cli.Revoke(rctx, clientv3LeaseID(lease))
	rcancel()
	if err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 20*time.Second, func() bool {
		rec, l, _ := record()
		return rec != nil && l != lease && len(rec.GetKinds()) == taskservice.MaxRemoteKinds && !n.Stats().SelfFenced
	}, "the node did not register again after losing its lease")
}

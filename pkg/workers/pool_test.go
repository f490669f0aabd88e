package workers_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/client"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func spec(identity, kind string, opts ...func(*client.TaskSpec)) client.TaskSpec {
	s := client.TaskSpec{Identity: identity, Kind: kind, Scope: client.ScopeIdentity, Triggers: []client.Trigger{client.Now()}}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func nodeKinds(t *testing.T, c *client.Client, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Name == name {
			return n.Kinds
		}
	}
	return nil
}

// A kind served only by a remote worker: the node advertises it while the
// worker is connected, runs its tasks there (message and data come back,
// the worker hears that its outcome was committed), and scheduling it
// fails, naming the kind, before the worker comes and after it leaves.
func TestRemoteWorkerServesAKind(t *testing.T) {
	_, c, ctx := nodeAndClient(t, time.Second)

	if _, _, err := c.Schedule(ctx, spec("alice", "resize")); !errors.Is(err, client.ErrFailedPrecondition) && !errors.Is(err, client.ErrInvalidArgument) || err == nil || !strings.Contains(err.Error(), `"resize"`) {
		t.Fatalf("Schedule of a kind nothing serves: %v", err)
	}

	var acks sync.Map
	w := c.NewWorker(client.WorkerOptions{Name: "w1", Concurrency: 4, Discover: 100 * time.Millisecond,
		OnAck: func(a client.Ack) { acks.Store(a.RunID, a) }})
	w.Handle("resize", func(_ context.Context, job *client.Job) error {
		job.SetData([]byte("done:" + string(job.Data)))
		job.SetMessage("resized " + string(job.Payload) + " fence " + job.Fence)
		return nil
	})
	stop := runWorker(t, w)
	tst.Eventually(t, 10*time.Second, func() bool { return slices.Contains(nodeKinds(t, c, "n1"), "resize") },
		"the node does not advertise the worker's kind")

	task, _, err := c.Schedule(ctx, spec("alice", "resize", func(s *client.TaskSpec) { s.Payload, s.Data = []byte("cat.png"), []byte("v1") }))
	if err != nil {
		t.Fatal(err)
	}
	done, runs := waitRuns(ctx, t, c, "alice", task.ID)
	if done.State != client.StateCompleted || len(runs) != 1 || runs[0].Outcome != "SUCCESS" ||
		runs[0].Message != "resized cat.png fence "+runs[0].Fence {
		t.Fatalf("task %s, runs %+v", done.State, runs)
	}
	if got := string(done.Proto.GetSpec().GetData()); got != "done:v1" {
		t.Fatalf("data %q, want done:v1", got)
	}
	tst.Eventually(t, 5*time.Second, func() bool {
		accepted := 0
		acks.Range(func(_, v any) bool {
			if v.(client.Ack).Accepted {
				accepted++
			}
			return true
		})
		return accepted == 1
	}, "the worker was not told its outcome was committed")

	stop()
	tst.Eventually(t, 10*time.Second, func() bool { return !slices.Contains(nodeKinds(t, c, "n1"), "resize") },
		"the node still advertises the kind of a worker that left")
	tst.Eventually(t, 5*time.Second, func() bool {
		_, _, err := c.Schedule(ctx, spec("alice", "resize"))
		return err != nil && strings.Contains(err.Error(), `"resize"`)
	}, "a kind nothing serves any more can still be scheduled")
}

// A worker never has more runs than its concurrency; every run completes.
func TestWorkerConcurrencyIsAFlowLimit(t *testing.T) {
	n, c, ctx := nodeAndClient(t, time.Second)
	var running, most atomic.Int64
	release := make(chan struct{})
	w := c.NewWorker(client.WorkerOptions{Name: "w1", Concurrency: 2, Discover: 100 * time.Millisecond})
	w.Handle("slow", func(ctx context.Context, _ *client.Job) error {
		now := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	runWorker(t, w)
	tst.Eventually(t, 10*time.Second, func() bool { return n.pool.Workers() == 1 }, "worker did not connect")
	var specs []client.TaskSpec
	for i := range 10 {
		specs = append(specs, spec("id-"+string(rune('a'+i)), "slow")) // 10 identities: all due at once
	}
	tasks, err := c.ScheduleMany(ctx, specs)
	if err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return running.Load() == 2 }, "the worker did not get 2 runs")
	close(release)
	for _, task := range tasks {
		if got, err := c.Wait(ctx, task.Spec.Identity, task.ID); err != nil || got.State != client.StateCompleted {
			t.Fatalf("task %s: %v %v", task.ID, got, err)
		}
	}
	if most.Load() != 2 {
		t.Fatalf("at most %d runs at once, want 2", most.Load())
	}
}

// A worker that goes away mid-run leaves the run to be retried as a new
// attempt with a new run number, which another worker runs.
func TestWorkerGoneMidRunIsRetriedElsewhere(t *testing.T) {
	n, c, ctx := nodeAndClient(t, time.Second)
	started := make(chan string, 1)
	w1 := c.NewWorker(client.WorkerOptions{Name: "w1", Discover: 100 * time.Millisecond})
	w1.Handle("job", func(ctx context.Context, job *client.Job) error {
		started <- job.Fence
		<-ctx.Done() // never finishes by itself
		return ctx.Err()
	})
	stop1 := runWorker(t, w1)
	tst.Eventually(t, 10*time.Second, func() bool { return n.pool.Workers() == 1 }, "w1 did not connect")
	task, _, err := c.Schedule(ctx, spec("bob", "job", func(s *client.TaskSpec) {
		s.Backoff = client.Backoff{Initial: 50 * time.Millisecond, Max: 100 * time.Millisecond}
	}))
	if err != nil {
		t.Fatal(err)
	}
	<-started
	stop1() // the stream closes with the run in flight
	w2 := c.NewWorker(client.WorkerOptions{Name: "w2", Discover: 100 * time.Millisecond})
	w2.Handle("job", func(context.Context, *client.Job) error { return nil })
	runWorker(t, w2)
	done, runs := waitRuns(ctx, t, c, "bob", task.ID)
	if done.State != client.StateCompleted || len(runs) != 2 ||
		runs[1].RunNumber != 1 || runs[1].Outcome != "ERROR" || !strings.Contains(runs[1].Message, "went away") ||
		runs[0].RunNumber != 2 || runs[0].Attempt != 2 || runs[0].Outcome != "SUCCESS" {
		t.Fatalf("state %s, runs %+v", done.State, runs)
	}
}

// A worker that falls silent (no heartbeat) is cut off after three
// intervals; its run is retried on a live worker.
func TestSilentWorkerIsCutOff(t *testing.T) {
	n, c, ctx := nodeAndClient(t, 200*time.Millisecond)
	hung, welcome, err := dialRaw(t, n.addr, &taskdv1.WorkerHello{Worker: "hung", Kinds: []string{"job"}, Concurrency: 1})
	if err != nil || welcome.GetWelcome() == nil {
		t.Fatalf("hello: %v %v", welcome, err)
	}
	// A worker connected at the same time that does send heartbeats stays.
	beating, _, err := dialRaw(t, n.addr, &taskdv1.WorkerHello{Worker: "beating", Kinds: []string{"other"}, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer beat(beating.stream, 50*time.Millisecond)()
	task, _, err := c.Schedule(ctx, spec("carol", "job", func(s *client.TaskSpec) {
		s.Backoff = client.Backoff{Initial: 50 * time.Millisecond, Max: 100 * time.Millisecond}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if hung.recv().GetRun() == nil {
		t.Fatal("the hung worker got no run")
	}
	// It sends nothing more: the node ends its stream.
	_, err = hung.stream.Recv()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("the silent worker's stream ended with %v, want DEADLINE_EXCEEDED", err)
	}
	if got := n.pool.Workers(); got != 1 {
		t.Fatalf("%d workers connected after the silent one was cut off, want the beating one", got)
	}
	w := c.NewWorker(client.WorkerOptions{Name: "live", Discover: 100 * time.Millisecond})
	w.Handle("job", func(context.Context, *client.Job) error { return nil })
	runWorker(t, w)
	done, err := c.Wait(ctx, "carol", task.ID)
	if err != nil || done.State != client.StateCompleted || done.RunCount != 2 {
		t.Fatalf("task %+v, %v", done, err)
	}
}

// An outcome for a run the node no longer holds is refused, and the worker
// is told: after the run's timeout, and after the node lost its lease (the
// identity may be run elsewhere). A wrong fence is refused too, and the run
// stays held for the right one.
func TestOutcomeOfADroppedRunIsRefused(t *testing.T) {
	etcd := tst.StartEtcd(t)
	cli := etcd.Client(t)
	n := startNode(t, cli, "n1", 5*time.Second, nil)
	c := dialClient(t, n.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, _, err := dialRaw(t, n.addr, &taskdv1.WorkerHello{Worker: "raw", Kinds: []string{"job"}, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	isAck := func(m *taskdv1.WorkResponse) bool { return m.GetAck() != nil }

	t.Run("wrong fence, then the right one", func(t *testing.T) {
		task, _, err := c.Schedule(ctx, spec("fence", "job"))
		if err != nil {
			t.Fatal(err)
		}
		run := r.recv().GetRun()
		r.send(&taskdv1.WorkOutcome{RunId: run.GetRunId(), Fence: "1.1", Result: taskdv1.WorkResult_WORK_RESULT_SUCCESS})
		if a := r.recvUntil(isAck).GetAck(); a.GetAccepted() || !strings.Contains(a.GetReason(), "outcome.fence") {
			t.Fatalf("ack of a wrong fence: %v", a)
		}
		r.send(&taskdv1.WorkOutcome{RunId: run.GetRunId(), Fence: run.GetFence(), Result: taskdv1.WorkResult_WORK_RESULT_SUCCESS})
		if a := r.recvUntil(isAck).GetAck(); !a.GetAccepted() {
			t.Fatalf("ack of the right fence: %v", a)
		}
		if got, err := c.Wait(ctx, "fence", task.ID); err != nil || got.State != client.StateCompleted {
			t.Fatalf("%v %v", got, err)
		}
	})

	t.Run("after the run's timeout", func(t *testing.T) {
		task, _, err := c.Schedule(ctx, spec("late", "job", func(s *client.TaskSpec) { s.Timeout, s.MaxAttempts = 300*time.Millisecond, 1 }))
		if err != nil {
			t.Fatal(err)
		}
		run := r.recv().GetRun()
		cancelMsg := r.recvUntil(func(m *taskdv1.WorkResponse) bool { return m.GetCancel() != nil }).GetCancel()
		if cancelMsg.GetRunId() != run.GetRunId() {
			t.Fatalf("cancel of %q, want %q", cancelMsg.GetRunId(), run.GetRunId())
		}
		r.send(&taskdv1.WorkOutcome{RunId: run.GetRunId(), Fence: run.GetFence(), Result: taskdv1.WorkResult_WORK_RESULT_SUCCESS})
		if a := r.recvUntil(isAck).GetAck(); a.GetAccepted() || !strings.Contains(a.GetReason(), "not held") {
			t.Fatalf("ack of a timed-out run: %v", a)
		}
		got, err := c.Wait(ctx, "late", task.ID)
		if err != nil || got.State != client.StateDead || got.LastRun.Outcome != "ERROR" {
			t.Fatalf("a timed-out run's task: %+v %v", got, err)
		}
	})

	t.Run("after the node lost its lease", func(t *testing.T) {
		task, _, err := c.Schedule(ctx, spec("leaseless", "job"))
		if err != nil {
			t.Fatal(err)
		}
		run := r.recv().GetRun()
		// The fault: the node's lease ends under it, as after a partition
		// longer than its TTL.
		gctx, gcancel := context.WithTimeout(ctx, 5*time.Second)
		reg, err := cli.Get(gctx, "/taskd/nodes/n1")
		gcancel()
		if err != nil || len(reg.Kvs) != 1 {
			t.Fatalf("registration: %v %v", reg, err)
		}
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = cli.Revoke(rctx, clientv3LeaseID(reg.Kvs[0].Lease))
		rcancel()
		if err != nil {
			t.Fatal(err)
		}
		r.recvUntil(func(m *taskdv1.WorkResponse) bool { return m.GetCancel().GetRunId() == run.GetRunId() })
		r.send(&taskdv1.WorkOutcome{RunId: run.GetRunId(), Fence: run.GetFence(), Result: taskdv1.WorkResult_WORK_RESULT_SUCCESS})
		if a := r.recvUntil(isAck).GetAck(); a.GetAccepted() {
			t.Fatalf("the outcome of a run the node lost was accepted: %v", a)
		}
		// The run is not lost: the node registers again and runs the task
		// again, under a new fence, as a recovery.
		again := r.recvUntil(func(m *taskdv1.WorkResponse) bool { return m.GetRun().GetTaskId() == task.ID }).GetRun()
		if again.GetFence() == run.GetFence() {
			t.Fatalf("the re-run has the lost run's fence %s", run.GetFence())
		}
		r.send(&taskdv1.WorkOutcome{RunId: again.GetRunId(), Fence: again.GetFence(), Result: taskdv1.WorkResult_WORK_RESULT_SUCCESS})
		if got, err := c.Wait(ctx, "leaseless", task.ID); err != nil || got.State != client.StateCompleted {
			t.Fatalf("%+v %v", got, err)
		}
	})
}

// A bad hello is refused, naming the field.
func TestBadHelloNamesTheField(t *testing.T) {
	etcd := tst.StartEtcd(t)
	n := startNode(t, etcd.Client(t), "n1", time.Second, nil)
	for _, tc := range []struct {
		hello *taskdv1.WorkerHello
		field string
	}{
		{&taskdv1.WorkerHello{Kinds: []string{"k"}, Concurrency: 1}, "hello.worker"},
		{&taskdv1.WorkerHello{Worker: "w", Concurrency: 1}, "hello.kinds"},
		{&taskdv1.WorkerHello{Worker: "w", Kinds: []string{""}, Concurrency: 1}, "hello.kinds[0]"},
		{&taskdv1.WorkerHello{Worker: "w", Kinds: []string{"k"}}, "hello.concurrency"},
		{&taskdv1.WorkerHello{Worker: "w", Kinds: []string{"k"}, Concurrency: 10001}, "hello.concurrency"},
	} {
		_, _, err := dialRaw(t, n.addr, tc.hello)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("hello %v: %v, want INVALID_ARGUMENT naming %s", tc.hello, err, tc.field)
		}
	}
}

// An EVERY_NODE task of a remote kind runs on the worker of each node, and
// each outcome is acknowledged as committed.
func TestEveryNodeTaskOnRemoteWorkers(t *testing.T) {
	n, c, ctx := nodeAndClient(t, time.Second)
	var accepted atomic.Int64
	w := c.NewWorker(client.WorkerOptions{Name: "w1", Discover: 100 * time.Millisecond,
		OnAck: func(a client.Ack) {
			if a.Accepted {
				accepted.Add(1)
			}
		}})
	w.Handle("local-cache", func(context.Context, *client.Job) error { return nil })
	runWorker(t, w)
	<-w.Ready()
	every := client.Every(50 * time.Millisecond)
	every.Count = 3
	if _, _, err := c.Schedule(ctx, client.TaskSpec{Identity: "cluster", Kind: "local-cache", Scope: client.ScopeEveryNode, Triggers: []client.Trigger{every}}); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return accepted.Load() == 3 }, "3 acks of an EVERY_NODE task's runs, got %d", accepted.Load())
	n.pool.Observe(taskservice.Event{}) // an unrelated event changes nothing
	if got := n.pool.Awaiting(); got != 0 {
		t.Fatalf("%d outcomes still await their commit after every ack", got)
	}
}

package workers_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/client"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Runs waiting for a remote worker hold no run slot: with two run slots
// (an identity's share is one), one worker of concurrency 1 and six slow
// remote runs of six identities due, a run of a local kind of another
// identity starts and finishes while the remote runs are still held up.
// Before, every waiting remote run held a slot, and the local run waited
// for the remote ones.
func TestWaitingForAWorkerHoldsNoRunSlot(t *testing.T) {
	etcd := tst.StartEtcd(t)
	local := taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil })
	n := startNode(t, etcd.Client(t), "n1", time.Second, map[string]taskservice.Handler{"local": local},
		func(s *nodeSetup) { s.node = func(c *taskservice.Config) { c.Workers = 2 } })
	c := dialClient(t, n.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	release := make(chan struct{})
	started := make(chan string, 16)
	w := c.NewWorker(client.WorkerOptions{Name: "w1", Concurrency: 1, Discover: 100 * time.Millisecond})
	w.Handle("slow", func(ctx context.Context, job *client.Job) error {
		started <- job.Identity
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	runWorker(t, w)
	tst.Eventually(t, 10*time.Second, func() bool { return n.pool.Workers() == 1 }, "worker did not connect")
	var specs []client.TaskSpec
	for i := range 6 {
		specs = append(specs, spec(fmt.Sprintf("remote-%d", i), "slow"))
	}
	slow, err := c.ScheduleMany(ctx, specs)
	if err != nil {
		t.Fatal(err)
	}
	var first string
	select {
	case first = <-started:
	case <-ctx.Done():
		t.Fatal("no remote run started")
	}
	// The other five wait for the worker (before this change, one of them
	// waited in its handler call, holding the second run slot).
	tst.Eventually(t, 10*time.Second, func() bool { s := n.Stats(); return s.WaitingForWorker["slow"] == 5 || s.Running == 2 },
		"the remote runs are not dispatched; stats %+v", n.Stats())

	// The remote runs are held up (the worker's only slot is taken, and
	// its handler waits for release): the local run starts regardless.
	task, _, err := c.Schedule(ctx, spec("other", "local"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	done, err := c.Wait(wctx, "other", task.ID)
	wcancel()
	if err != nil || done.State != client.StateCompleted {
		t.Fatalf("the local run did not finish while the remote runs waited for a worker: %+v %v", done, err)
	}
	if s := n.Stats(); s.Running != 1 || s.WaitingForWorker["slow"] != 5 {
		t.Fatalf("with the local run done: %d runs in flight (want the worker's one), %d waiting (want 5)", s.Running, s.WaitingForWorker["slow"])
	}
	for _, task := range slow {
		if task.Spec.Identity == first {
			continue
		}
		got, err := c.Get(ctx, task.Spec.Identity, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != client.StateScheduled || got.RunCount != 0 || got.Attempt != 0 || got.Waiting != "worker" || got.WaitingSince.IsZero() {
			t.Fatalf("a remote run waiting for the worker: state %s, runs %d, attempt %d, waiting %q since %v",
				got.State, got.RunCount, got.Attempt, got.Waiting, got.WaitingSince)
		}
	}
	close(release)
	for _, task := range slow {
		got, err := c.Wait(ctx, task.Spec.Identity, task.ID)
		if err != nil || got.State != client.StateCompleted || got.RunCount != 1 || got.Waiting != "" {
			t.Fatalf("remote task %s: %+v %v", task.Spec.Identity, got, err)
		}
	}
}

// A run of a remote kind with no worker connected waits, holding nothing,
// for as long as it takes: well past its timeout it is shown waiting for a
// worker (not RUNNING), has no run in its history and has used no attempt
// (max_attempts 1: one failed attempt would make it DEAD). When a worker
// connects it runs as run 1, attempt 1. Before, it was recorded as an
// ERROR "no worker took the run" at its timeout, and went DEAD.
func TestRunWaitingForAWorkerIsNotFailed(t *testing.T) {
	n, c, ctx := nodeAndClient(t, time.Second)
	// A worker of the kind is connected while the task is scheduled (a
	// kind nothing serves is refused), and gone when it falls due: the
	// identity is paused meanwhile.
	raw, welcome, err := dialRaw(t, n.addr, &taskdv1.WorkerHello{Worker: "gone", Kinds: []string{"job"}, Concurrency: 1})
	if err != nil || welcome.GetWelcome() == nil {
		t.Fatalf("hello: %v %v", welcome, err)
	}
	if _, err := c.PauseIdentity(ctx, "dana"); err != nil {
		t.Fatal(err)
	}
	const timeout = 200 * time.Millisecond
	task, _, err := c.Schedule(ctx, spec("dana", "job", func(s *client.TaskSpec) { s.Timeout, s.MaxAttempts = timeout, 1 }))
	if err != nil {
		t.Fatal(err)
	}
	raw.cancel()
	tst.Eventually(t, 10*time.Second, func() bool { return n.pool.Workers() == 0 }, "the worker did not leave")
	if err := c.ResumeIdentity(ctx, "dana"); err != nil {
		t.Fatal(err)
	}

	// Polled until it has waited five times its timeout, checked each time.
	var since time.Time
	tst.Eventually(t, 20*time.Second, func() bool {
		got, err := c.Get(ctx, "dana", task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != client.StateScheduled || got.RunCount != 0 || got.Attempt != 0 || got.LastRun != nil {
			t.Fatalf("a run waiting for a worker: state %s, runs %d, attempt %d, last run %+v", got.State, got.RunCount, got.Attempt, got.LastRun)
		}
		if got.Waiting == "" {
			return false // not yet due after the resume
		}
		if got.Waiting != "worker" || got.WaitingSince.IsZero() || (!since.IsZero() && !got.WaitingSince.Equal(since)) {
			t.Fatalf("waiting %q since %v (first seen since %v)", got.Waiting, got.WaitingSince, since)
		}
		since = got.WaitingSince
		return time.Since(since) > 5*timeout
	}, "the run is not shown waiting for a worker")
	if s := n.Stats(); s.WaitingForWorker["job"] != 1 || s.Running != 0 || s.Due != 1 {
		t.Fatalf("stats: %d waiting for a worker of kind job (want 1), %d running (want 0), %d due (want 1)", s.WaitingForWorker["job"], s.Running, s.Due)
	}
	if runs, err := c.Runs(ctx, "dana", task.ID); err != nil || len(runs) != 0 {
		t.Fatalf("history of a run that waited for a worker: %+v %v", runs, err)
	}

	w := c.NewWorker(client.WorkerOptions{Name: "late", Discover: 100 * time.Millisecond})
	w.Handle("job", func(context.Context, *client.Job) error { return nil })
	runWorker(t, w)
	done, runs := waitRuns(ctx, t, c, "dana", task.ID)
	if done.State != client.StateCompleted || done.Waiting != "" || len(runs) != 1 ||
		runs[0].RunNumber != 1 || runs[0].Attempt != 1 || runs[0].Outcome != "SUCCESS" {
		t.Fatalf("state %s (waiting %q), runs %+v", done.State, done.Waiting, runs)
	}
	if s := n.Stats(); s.WaitingForWorker["job"] != 0 {
		t.Fatalf("%d still waiting", s.WaitingForWorker["job"])
	}
}

// Runs waiting for a worker are handed out in the order they fell due,
// across identities, whatever the order the tasks were scheduled in: six
// tasks of six identities due one after another wait while the only
// worker's slot is taken, then a worker of concurrency 1 runs them in due
// order. Before, the waiting calls raced for each freed slot.
func TestWaitingRunsAreHandedOutInDueOrder(t *testing.T) {
	// A long heartbeat: the busy worker, which sends none, is not cut off.
	n, c, ctx := nodeAndClient(t, time.Minute)
	// The busy worker takes the first run and never answers it.
	busyWorker(ctx, t, c, n.addr)

	// Due order: d0, d1, ... d5; scheduled in another order, so that
	// neither task ids nor identities sort that way.
	base := time.Now().Add(300 * time.Millisecond)
	var specs []client.TaskSpec
	for _, k := range []int{5, 2, 4, 0, 3, 1} {
		specs = append(specs, spec(fmt.Sprintf("id-%c", 'z'-k), "job", func(s *client.TaskSpec) {
			s.Triggers = []client.Trigger{client.At(base.Add(time.Duration(k) * 40 * time.Millisecond))}
		}))
	}
	var want []string
	for k := range 6 {
		want = append(want, fmt.Sprintf("id-%c", 'z'-k))
	}
	for _, s := range specs {
		if _, _, err := c.Schedule(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// All six wait for a worker (before this change: started, waiting in
	// their handler calls), with the blocker's run in flight.
	tst.Eventually(t, 20*time.Second, func() bool { s := n.Stats(); return s.WaitingForWorker["job"] == 6 || s.Running == 7 },
		"6 runs due and the blocker's in flight; stats %+v", n.Stats())
	waiting := n.Stats().WaitingForWorker["job"]

	var mu sync.Mutex
	var order []string
	w := c.NewWorker(client.WorkerOptions{Name: "one", Concurrency: 1, Discover: 100 * time.Millisecond})
	w.Handle("job", func(_ context.Context, job *client.Job) error {
		mu.Lock()
		order = append(order, job.Identity)
		mu.Unlock()
		return nil
	})
	runWorker(t, w)
	tst.Eventually(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 6
	}, "the 6 waiting runs did not run")
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(order, want) {
		t.Fatalf("runs in order %v, want due order %v", order, want)
	}
	if waiting != 6 {
		t.Fatalf("%d runs were counted waiting for a worker, want 6", waiting)
	}
}

// A run waiting for a worker on a node whose identity moves away is
// dropped from that node's wait, nothing written, and runs once on the new
// owner, as run 1, attempt 1.
func TestWaitingRunOfAMovedIdentityRunsOnTheNewOwner(t *testing.T) {
	etcd := tst.StartEtcd(t)
	cli := etcd.Client(t)
	n1 := startNode(t, cli, "n1", time.Second, nil)
	n2 := startNode(t, cli, "n2", time.Second, nil)
	c := dialClient(t, n1.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	raw, _, err := dialRaw(t, n1.addr, &taskdv1.WorkerHello{Worker: "gone", Kinds: []string{"job"}, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PauseIdentity(ctx, "erin"); err != nil {
		t.Fatal(err)
	}
	task, _, err := c.Schedule(ctx, spec("erin", "job"))
	if err != nil {
		t.Fatal(err)
	}
	if id, err := c.Identity(ctx, "erin"); err != nil || id.Node != "n1" {
		t.Fatalf("erin is owned by %+v (%v), want n1", id, err)
	}
	raw.cancel()
	tst.Eventually(t, 10*time.Second, func() bool { return n1.pool.Workers() == 0 }, "the worker did not leave")
	if err := c.ResumeIdentity(ctx, "erin"); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return n1.Stats().WaitingForWorker["job"] == 1 }, "the run does not wait on n1")

	on2, _, err := dialRaw(t, n2.addr, &taskdv1.WorkerHello{Worker: "on-n2", Kinds: []string{"job"}, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Move(ctx, "erin", "n2"); err != nil {
		t.Fatal(err)
	}
	run := on2.recvUntil(func(m *taskdv1.WorkResponse) bool { return m.GetRun() != nil }).GetRun()
	if run.GetTaskId() != task.ID || run.GetRunNumber() != 1 || run.GetAttempt() != 1 || run.GetNode() != "n2" {
		t.Fatalf("run on n2: %v", run)
	}
	on2.send(&taskdv1.WorkOutcome{RunId: run.GetRunId(), Fence: run.GetFence(), Result: taskdv1.WorkResult_WORK_RESULT_SUCCESS})
	done, err := c.Wait(ctx, "erin", task.ID)
	if err != nil || done.State != client.StateCompleted || done.RunCount != 1 {
		t.Fatalf("%+v %v", done, err)
	}
	if s := n1.Stats(); s.WaitingForWorker["job"] != 0 || s.Due != 0 {
		t.Fatalf("n1 still holds the moved run: %d waiting for a worker, %d due", s.WaitingForWorker["job"], s.Due)
	}
}

// A run of a remote kind under a --limit takes its kind's token first and
// then waits for a worker holding it; if its identity moves away, the token
// goes back, to the next run of the kind waiting for one.
func TestTokenOfAWaitingRunGoesBackWhenItsIdentityMoves(t *testing.T) {
	etcd := tst.StartEtcd(t)
	cli := etcd.Client(t)
	// A long heartbeat: the busy worker, which sends none, is not cut off.
	n1 := startNode(t, cli, "n1", time.Minute, nil, func(s *nodeSetup) { s.node = func(c *taskservice.Config) { c.KindLimits = map[string]int{"job": 2} } })
	startNode(t, cli, "n2", time.Second, nil)
	c := dialClient(t, n1.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	busyWorker(ctx, t, c, n1.addr) // token 1, the worker's slot
	if _, _, err := c.Schedule(ctx, spec("erin", "job")); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return n1.Stats().WaitingForWorker["job"] == 1 }, "erin's run (token 2) does not wait for a worker")
	if _, _, err := c.Schedule(ctx, spec("fred", "job")); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return n1.Stats().WaitingForLimit["job"] == 1 }, "fred's run does not wait for a token")

	if _, err := c.Move(ctx, "erin", "n2"); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool {
		s := n1.Stats()
		return s.WaitingForLimit["job"] == 0 && s.WaitingForWorker["job"] == 1
	}, "erin's token did not go to fred's run; stats %+v", n1.Stats())
}

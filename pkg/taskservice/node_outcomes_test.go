package taskservice_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestPermanentErrorIsNotRetried: a once task whose run fails permanently
// is DEAD after its one run, not COMPLETED (before the fix it read
// COMPLETED, as if it had done its work).
func TestPermanentErrorIsNotRetried(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(context.Context, *taskservice.Run, int) error {
		return taskservice.Permanent(errors.New("bad payload"))
	}
	task := h.schedule(spec("e", "rec", now()))
	got := h.waitState("e", task.Id, taskdv1.TaskState_TASK_STATE_DEAD)
	if n := len(h.rec.of(task.Id)); n != 1 || got.LastRun.Outcome != taskdv1.Outcome_OUTCOME_ERROR {
		t.Fatalf("ran %d times, last outcome %s: want one ERROR", n, got.LastRun.Outcome)
	}
}

func TestTimeoutCancelsHandlerAndRetries(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		if r.Attempt == 1 {
			<-ctx.Done() // a handler that respects its deadline
			return ctx.Err()
		}
		return nil
	}
	s := spec("t", "rec", now())
	s.Timeout = durationpb.New(50 * time.Millisecond)
	s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(5 * time.Millisecond)}
	task := h.schedule(s)
	h.waitState("t", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	runs := h.runs("t", task.Id)
	if len(runs) != 2 || runs[1].Outcome != taskdv1.Outcome_OUTCOME_ERROR {
		t.Fatalf("history %v: want a timed-out ERROR then a success", runs)
	}
}

func TestHandlerDataIsStoredWithOutcome(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		r.SetData([]byte(fmt.Sprintf("%s+%d", r.Data, r.RunNumber)))
		return nil
	}
	s := spec("data", "rec", every(time.Now(), 20*time.Millisecond, 3))
	s.Data = []byte("seed")
	task := h.schedule(s)
	got := h.waitState("data", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	calls := h.rec.of(task.Id)
	want := []string{"seed", "seed+1", "seed+1+2"}
	for i, c := range calls {
		if c.Data != want[i] {
			t.Errorf("run %d saw data %q, want %q", i+1, c.Data, want[i])
		}
	}
	if string(got.Spec.Data) != "seed+1+2+3" {
		t.Errorf("stored data %q, want seed+1+2+3", got.Spec.Data)
	}
}

// TestEpochChangeMidRunCommitsUnderTheNewEpoch: the identity's epoch
// changes under a run in flight while the identity stays mapped to this
// node (as after a move away and back). The run's marker still stands, so
// the node commits its result under the new epoch: one execution, no
// DROPPED, no second run.
func TestEpochChangeMidRunCommitsUnderTheNewEpoch(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	h := newHarness(t, nil)
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		started <- struct{}{}
		if n == 1 {
			<-release
		}
		return nil
	}
	task := h.schedule(spec("moving", "rec", now()))
	<-started
	// Bump the mapping's epoch under the run, as a move there and back would.
	cli := h.etcd.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	key := "/taskd/map/moving"
	cur, err := cli.Get(ctx, key)
	if err != nil || len(cur.Kvs) != 1 {
		t.Fatalf("read mapping: %v %v", err, cur)
	}
	bumped, err := cli.Put(ctx, key, string(cur.Kvs[0].Value))
	if err != nil {
		t.Fatalf("bump mapping: %v", err)
	}
	close(release)

	got := h.waitState("moving", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if h.ev.has(taskservice.EventDropped, task.Id) {
		t.Errorf("the run was DROPPED; want its result committed under the new epoch")
	}
	if calls := h.rec.of(task.Id); len(calls) != 1 {
		t.Fatalf("ran %d times, want 1", len(calls))
	}
	runs := h.runs("moving", task.Id)
	if len(runs) != 1 || runs[0].Outcome != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Errorf("history %v: want one SUCCESS", runs)
	}
	if got.Revision <= bumped.Header.Revision {
		t.Errorf("task revision %d: want the commit after the epoch change at %d", got.Revision, bumped.Header.Revision)
	}
	if got.RunCount != 1 {
		t.Errorf("run_count %d, want 1", got.RunCount)
	}
}

func TestPerIdentityOrder(t *testing.T) {
	h := newHarness(t, func(c *taskservice.Config) { c.Workers = 8 })
	var specs []*taskdv1.TaskSpec
	at := time.Now().Add(200 * time.Millisecond)
	for i := range 20 {
		s := spec("ordered", "rec", once(at))
		s.Priority = int32(i % 3)
		specs = append(specs, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := h.node.Client.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: specs})
	if err != nil {
		t.Fatal(err)
	}
	// Then 10 with no delay, one after another.
	var seq []string
	for range 10 {
		seq = append(seq, h.schedule(spec("fifo", "rec", now())).Id)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return len(h.rec.all()) == 30 }, "30 runs")
	// The order in which the node starts the runs is the order of their
	// STARTED events (emitted in order, right before each handler call).
	// Handlers then run concurrently, so what one records first inside its
	// own goroutine is not the start order.
	var orderedIDs, fifoIDs []string
	h.ev.mu.Lock()
	for _, ev := range h.ev.evs {
		if ev.Type != taskservice.EventStarted {
			continue
		}
		if ev.Identity == "ordered" {
			orderedIDs = append(orderedIDs, ev.TaskID)
		} else {
			fifoIDs = append(fifoIDs, ev.TaskID)
		}
	}
	h.ev.mu.Unlock()
	// Same instant: priority high first, then schedule order.
	var want []string
	for p := 2; p >= 0; p-- {
		for i, task := range resp.Tasks {
			if i%3 == p {
				want = append(want, task.Id)
			}
		}
	}
	if fmt.Sprint(orderedIDs) != fmt.Sprint(want) {
		t.Errorf("start order %v\nwant %v", orderedIDs, want)
	}
	if fmt.Sprint(fifoIDs) != fmt.Sprint(seq) {
		t.Errorf("start order %v\nwant schedule order %v", fifoIDs, seq)
	}
}

func TestNonDurableTaskRunsLocallyAndIsNotStored(t *testing.T) {
	h := newHarness(t, nil)
	s := spec("nd", "rec", now())
	s.NonDurable = true
	task := h.schedule(s)
	tst.Eventually(t, 10*time.Second, func() bool { return len(h.rec.of(task.Id)) == 1 }, "the non-durable run")
	cli := h.etcd.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/taskd/", clientWithPrefix()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if contains(string(kv.Key), task.Id) || contains(string(kv.Key), "/nd") {
			t.Errorf("non-durable task left key %s in etcd", kv.Key)
		}
	}
	if got := h.get("nd", task.Id); got.State != taskdv1.TaskState_TASK_STATE_COMPLETED {
		t.Errorf("state %s, want COMPLETED", got.State)
	}
}

func TestCancelStopsPeriodicTask(t *testing.T) {
	h := newHarness(t, nil)
	task := h.schedule(spec("c", "rec", every(time.Now(), 20*time.Millisecond, 0)))
	tst.Eventually(t, 10*time.Second, func() bool { return len(h.rec.of(task.Id)) >= 2 }, "two runs")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := h.node.Client.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "c", TaskId: task.Id}); err != nil {
		t.Fatal(err)
	}
	got := h.waitState("c", task.Id, taskdv1.TaskState_TASK_STATE_CANCELED)
	// Any run in flight at the cancel commits; then nothing more starts.
	tst.Eventually(t, 5*time.Second, func() bool { return h.get("c", task.Id).LastRun.GetRunNumber() == int64(len(h.rec.of(task.Id))) },
		"the last run to commit")
	n := len(h.rec.of(task.Id))
	// A later task of the same identity runs: the cancelled one did not.
	probe := h.schedule(spec("c", "rec", after(100*time.Millisecond)))
	h.waitState("c", probe.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if m := len(h.rec.of(task.Id)); m != n {
		t.Fatalf("cancelled task ran %d more times", m-n)
	}
	if got.NextFireTime != nil {
		t.Errorf("cancelled task still has a next fire time")
	}
	if !h.ev.has(taskservice.EventCanceled, task.Id) {
		t.Error("no CANCELED event")
	}
}

func TestNoRunBeforeRunning(t *testing.T) {
	etcd := tst.StartEtcd(t)
	rec := &recorder{}
	n := tst.NewNode(t, etcd.Client(t), taskservice.Config{Name: "late", Handlers: map[string]taskservice.Handler{"rec": rec}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The API serves while the node is STARTING; the task is stored.
	resp, err := n.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec("early", "rec", now())})
	if err != nil {
		t.Fatalf("schedule while starting: %v", err)
	}
	if n.State() != taskdv1.NodeState_NODE_STATE_STARTING || len(rec.all()) != 0 {
		t.Fatalf("state %s, %d runs before Start", n.State(), len(rec.all()))
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return len(rec.of(resp.Task.Id)) == 1 }, "the run after start")
	if c := rec.of(resp.Task.Id)[0]; c.Start.Before(n.DispatchStart()) {
		t.Errorf("run started at %s, before dispatch_start %s", c.Start, n.DispatchStart())
	}
}

func TestRestartUnderSameNameResolvesPreviousIncarnation(t *testing.T) {
	etcd := tst.StartEtcd(t)
	block := make(chan struct{})
	defer close(block)
	returned := make(chan struct{}, 1)
	first := &recorder{behave: func(ctx context.Context, r *taskservice.Run, n int) error {
		defer func() { returned <- struct{}{} }()
		select { // in flight until released, or until the old node learns its lease is gone
		case <-block:
		case <-ctx.Done():
		}
		return nil
	}}
	ev1 := &events{}
	// The lease is long (30 s) so that the waits below, which give up well
	// before it could expire, can only succeed if nothing waited for it.
	const oldTTL = 30 * time.Second
	old := tst.StartNode(t, etcd.Client(t), taskservice.Config{Name: "same", LeaseTTL: oldTTL,
		Handlers: map[string]taskservice.Handler{"rec": first}, Listeners: []taskservice.Listener{ev1.listen}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := old.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec("held", "rec", now())})
	if err != nil {
		t.Fatal(err)
	}
	taskID := resp.Task.Id
	tst.Eventually(t, 10*time.Second, func() bool { return len(first.of(taskID)) == 1 }, "the first run to start")
	pending, err := old.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec("held", "rec", after(300*time.Millisecond))})
	if err != nil {
		t.Fatal(err)
	}

	// A new incarnation under the same name frees what the old one held at
	// once: the old lease is revoked when it registers, not left to expire.
	cli := etcd.Client(t)
	reg, err := cli.Get(ctx, "/taskd/nodes/same")
	if err != nil || len(reg.Kvs) != 1 || reg.Kvs[0].Lease == 0 {
		t.Fatalf("read the old registration: %v %v", reg, err)
	}
	oldLease := clientv3.LeaseID(reg.Kvs[0].Lease)
	second := &recorder{}
	fresh := tst.StartNode(t, etcd.Client(t), taskservice.Config{Name: "same", LeaseTTL: oldTTL,
		Handlers: map[string]taskservice.Handler{"rec": second}})
	ttl, err := cli.TimeToLive(ctx, oldLease)
	if err != nil || ttl.TTL != -1 {
		t.Fatalf("old incarnation's lease after the new one started: %v (%v), want revoked (TTL -1)", ttl, err)
	}
	// Both tasks run on the new incarnation well within the old lease's
	// TTL: a deadline of a third of it is reached only if it was waited for.
	tst.Eventually(t, oldTTL/3, func() bool { return len(second.of(taskID)) == 1 && len(second.of(pending.Task.Id)) == 1 },
		"the new incarnation to run both tasks (the old lease of %s must not be waited for)", oldTTL)
	c := second.of(taskID)[0]
	if !c.Recovery || c.Run != first.of(taskID)[0].Run {
		t.Errorf("re-run %+v: want recovery with the same run number", c)
	}
	h := &harness{t: t, node: fresh}
	runs := h.runs("held", taskID)
	tst.Eventually(t, 5*time.Second, func() bool { runs = h.runs("held", taskID); return len(runs) == 2 }, "two history entries")
	if runs[1].Outcome != taskdv1.Outcome_OUTCOME_INTERRUPTED || !contains(runs[1].Message, old.Incarnation()) {
		t.Errorf("history %v: want the old run INTERRUPTED naming incarnation %s", runs, old.Incarnation())
	}
	// The old incarnation's run now ends (if its node has not already
	// cancelled it on finding its lease revoked): its commit must fail the
	// fence.
	select {
	case block <- struct{}{}:
	case <-returned:
	}
	tst.Eventually(t, 5*time.Second, func() bool { return ev1.has(taskservice.EventDropped, taskID) }, "the old run to be DROPPED")
	if got := h.get("held", taskID); got.LastRun.Node != "same" || got.RunCount != 1 || got.State != taskdv1.TaskState_TASK_STATE_COMPLETED {
		t.Errorf("task after both: %v", got)
	}
	nodes, err := fresh.ListNodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].Incarnation != fresh.Incarnation() {
		t.Errorf("nodes %v (%v): want only the new incarnation", nodes, err)
	}
}

func TestBatchWithRepeatedIdempotencyKey(t *testing.T) {
	h := newHarness(t, nil)
	a := spec("pa", "rec", after(time.Hour))
	b1 := spec("pb", "rec", after(time.Hour))
	b1.IdempotencyKey = "k"
	b2 := spec("pb", "rec", after(time.Hour))
	b2.IdempotencyKey = "k"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := h.node.Client.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: []*taskdv1.TaskSpec{a, b1, b2}})
	if err != nil {
		t.Fatalf("batch: %v", err)
	}
	if resp.Tasks[1].Id != resp.Tasks[2].Id {
		t.Errorf("repeated key made two tasks %s and %s", resp.Tasks[1].Id, resp.Tasks[2].Id)
	}
	// One Txn for the whole batch: every task carries its revision.
	if resp.Tasks[0].Revision != resp.Tasks[1].Revision {
		t.Errorf("revisions %d and %d: the batch was not one Txn", resp.Tasks[0].Revision, resp.Tasks[1].Revision)
	}
	list, err := h.node.Client.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "pb"})
	if err != nil || len(list.Tasks) != 1 {
		t.Fatalf("pb has %d tasks (%v), want 1", len(list.GetTasks()), err)
	}
}

// A batch too large for one etcd request (10 tasks of 200 KiB) is still
// stored whole, in Txns that fit, and every task runs.
func TestLargeBatchIsStoredInChunks(t *testing.T) {
	h := newHarness(t, nil)
	var specs []*taskdv1.TaskSpec
	for range 10 {
		s := spec("big", "rec", now())
		s.Payload = make([]byte, 200<<10)
		specs = append(specs, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := h.node.Client.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: specs}, grpcMaxMsg())
	if err != nil {
		t.Fatalf("schedule 2 MB batch: %v", err)
	}
	for _, task := range resp.Tasks {
		h.waitState("big", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	}
}

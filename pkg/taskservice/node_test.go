package taskservice_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// seen is one handler call, as a recorder saw it.
type seen struct {
	Identity, TaskID  string
	Run               int64
	Attempt           int
	Fence             taskservice.Fence
	Fire, Start       time.Time
	Manual, Recovery  bool
	Data              string
	Node, Incarnation string
}

// recorder is a handler that records every call and returns what its
// behave function says (nil if unset).
type recorder struct {
	mu     sync.Mutex
	calls  []seen
	behave func(ctx context.Context, r *taskservice.Run, n int) error
}

func (rc *recorder) Work(ctx context.Context, r *taskservice.Run) error {
	rc.mu.Lock()
	s := seen{Identity: r.Identity, TaskID: r.TaskID, Run: r.RunNumber, Attempt: r.Attempt, Fence: r.Fence,
		Fire: r.FireTime, Start: time.Now(), Manual: r.Manual, Recovery: r.Recovery, Data: string(r.Data), Node: r.Node}
	rc.calls = append(rc.calls, s)
	n := len(rc.calls)
	b := rc.behave
	rc.mu.Unlock()
	if b != nil {
		return b(ctx, r, n)
	}
	return nil
}

func (rc *recorder) of(taskID string) []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []seen
	for _, c := range rc.calls {
		if c.TaskID == taskID {
			out = append(out, c)
		}
	}
	return out
}

func (rc *recorder) all() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seen(nil), rc.calls...)
}

// events collects a node's events.
type events struct {
	mu  sync.Mutex
	evs []taskservice.Event
}

func (e *events) listen(ev taskservice.Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

func (e *events) has(typ taskservice.EventType, taskID string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.evs {
		if ev.Type == typ && ev.TaskID == taskID {
			return true
		}
	}
	return false
}

func (e *events) types(taskID string) []taskservice.EventType {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []taskservice.EventType
	for _, ev := range e.evs {
		if ev.TaskID == taskID {
			out = append(out, ev.Type)
		}
	}
	return out
}

func once(at time.Time) *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: timestamppb.New(at)}}}
}

func after(d time.Duration) *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{Delay: durationpb.New(d)}}}
}

func now() *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}
}

func every(start time.Time, iv time.Duration, count int64) *taskdv1.Trigger {
	p := &taskdv1.PeriodicTrigger{Interval: durationpb.New(iv), Count: count}
	if !start.IsZero() {
		p.Start = timestamppb.New(start)
	}
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: p}}
}

func spec(id, kind string, trig ...*taskdv1.Trigger) *taskdv1.TaskSpec {
	return &taskdv1.TaskSpec{Identity: id, Kind: kind, Scope: taskdv1.Scope_SCOPE_IDENTITY, Triggers: trig}
}

type harness struct {
	t    *testing.T
	etcd *tst.Etcd
	node *tst.Node
	rec  *recorder
	ev   *events
}

// newHarness starts etcd and one node "n1" with a recorder for kind "rec".
func newHarness(t *testing.T, mod func(*taskservice.Config)) *harness {
	t.Helper()
	return newHarnessOn(t, tst.StartEtcd(t), mod)
}

// newHarnessOn is newHarness on the etcd given.
func newHarnessOn(t *testing.T, etcd *tst.Etcd, mod func(*taskservice.Config)) *harness {
	t.Helper()
	h := &harness{t: t, etcd: etcd, rec: &recorder{}, ev: &events{}}
	cfg := taskservice.Config{
		Name:      "n1",
		Handlers:  map[string]taskservice.Handler{"rec": h.rec},
		Listeners: []taskservice.Listener{h.ev.listen},
		LeaseTTL:  2 * time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	h.node = tst.StartNode(t, h.etcd.Client(t), cfg)
	return h
}

func (h *harness) schedule(s *taskdv1.TaskSpec) *taskdv1.Task {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := h.node.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
	if err != nil {
		h.t.Fatalf("schedule: %v", err)
	}
	return resp.Task
}

func (h *harness) get(id, taskID string) *taskdv1.Task {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := h.node.Client.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: id, TaskId: taskID})
	if err != nil {
		h.t.Fatalf("get task %s: %v", taskID, err)
	}
	return resp.Task
}

func (h *harness) runs(id, taskID string) []*taskdv1.Run {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := h.node.Client.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: id, TaskId: taskID})
	if err != nil {
		h.t.Fatalf("list runs %s: %v", taskID, err)
	}
	return resp.Runs
}

func (h *harness) waitState(id, taskID string, want taskdv1.TaskState) *taskdv1.Task {
	h.t.Helper()
	var last *taskdv1.Task
	tst.Eventually(h.t, 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := h.node.Client.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: id, TaskId: taskID})
		if status.Code(err) == codes.Unavailable {
			return false // etcd away: keep waiting
		}
		if err != nil {
			h.t.Fatalf("get task %s: %v", taskID, err)
		}
		last = resp.Task
		return last.State == want
	}, "task %s to reach %s", taskID, want)
	return last
}

func TestOnceTriggersFireAtTheirTime(t *testing.T) {
	h := newHarness(t, nil)
	at := time.Now().Add(300 * time.Millisecond).Truncate(time.Millisecond)
	tNow := h.schedule(spec("alice", "rec", now()))
	tDelay := h.schedule(spec("alice", "rec", after(200*time.Millisecond)))
	tAt := h.schedule(spec("alice", "rec", once(at)))

	for _, task := range []*taskdv1.Task{tNow, tDelay, tAt} {
		h.waitState("alice", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	}
	check := func(task *taskdv1.Task, wantFire time.Time) {
		calls := h.rec.of(task.Id)
		if len(calls) != 1 {
			t.Fatalf("task %s ran %d times, want once", task.Id, len(calls))
		}
		c := calls[0]
		if !c.Fire.Equal(wantFire) {
			t.Errorf("task %s fire time %s, want %s", task.Id, c.Fire, wantFire)
		}
		if c.Start.Before(wantFire) {
			t.Errorf("task %s started at %s, before its fire time %s", task.Id, c.Start, wantFire)
		}
		if c.Run != 1 || c.Attempt != 1 || c.Fence.Epoch == 0 || c.Fence.Revision == 0 {
			t.Errorf("task %s run %d attempt %d fence %s: want run 1, attempt 1, a fence", task.Id, c.Run, c.Attempt, c.Fence)
		}
	}
	check(tNow, tNow.Spec.Triggers[0].GetOnce().At.AsTime())
	check(tDelay, tDelay.Spec.Triggers[0].GetOnce().At.AsTime())
	check(tAt, at)
	// A delay resolves to an absolute time when accepted.
	if d := tDelay.Spec.Triggers[0].GetOnce().At.AsTime().Sub(tDelay.CreatedAt.AsTime()); d != 200*time.Millisecond {
		t.Errorf("delay resolved to %s after creation, want 200ms", d)
	}
	got := h.ev.types(tNow.Id)
	want := []taskservice.EventType{taskservice.EventFired, taskservice.EventStarted, taskservice.EventSucceeded, taskservice.EventFinalized}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestPeriodicTriggerFixedRate(t *testing.T) {
	h := newHarness(t, nil)
	start := time.Now().Add(100 * time.Millisecond).Truncate(time.Millisecond)
	iv := 80 * time.Millisecond
	task := h.schedule(spec("p", "rec", every(start, iv, 5)))
	h.waitState("p", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	calls := h.rec.of(task.Id)
	if len(calls) != 5 {
		t.Fatalf("ran %d times, want 5", len(calls))
	}
	for k, c := range calls {
		want := start.Add(time.Duration(k) * iv)
		if !c.Fire.Equal(want) {
			t.Errorf("run %d fire time %s, want %s (start + %d*interval)", k+1, c.Fire, want, k)
		}
		if c.Start.Before(want) {
			t.Errorf("run %d started before its fire time", k+1)
		}
		if c.Run != int64(k+1) {
			t.Errorf("run number %d, want %d", c.Run, k+1)
		}
	}
	if runs := h.runs("p", task.Id); len(runs) != 5 || runs[0].RunNumber != 5 {
		t.Errorf("history has %d runs (newest %v), want 5 newest first", len(runs), runs)
	}
}

func TestPeriodicEndBoundsRuns(t *testing.T) {
	h := newHarness(t, nil)
	start := time.Now().Add(50 * time.Millisecond).Truncate(time.Millisecond)
	trig := every(start, 50*time.Millisecond, 0)
	trig.GetPeriodic().End = timestamppb.New(start.Add(120 * time.Millisecond)) // fires at +0, +50, +100
	task := h.schedule(spec("p", "rec", trig))
	h.waitState("p", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if n := len(h.rec.of(task.Id)); n != 3 {
		t.Fatalf("ran %d times, want 3", n)
	}
}

func TestNoOverlapForRecurringTask(t *testing.T) {
	var mu sync.Mutex
	inFlight, maxInFlight := 0, 0
	h := newHarness(t, nil)
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		mu.Lock()
		inFlight++
		if inFlight > maxInFlight {
			maxInFlight = inFlight
		}
		mu.Unlock()
		time.Sleep(60 * time.Millisecond) // the run's own work: longer than the interval
		mu.Lock()
		inFlight--
		mu.Unlock()
		return nil
	}
	task := h.schedule(spec("o", "rec", every(time.Now(), 10*time.Millisecond, 6)))
	h.waitState("o", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if maxInFlight != 1 {
		t.Fatalf("%d runs of one recurring task overlapped, want none", maxInFlight)
	}
}

func TestRetryWithBackoffThenSuccess(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		if r.Attempt < 3 {
			return errors.New("transient")
		}
		return nil
	}
	s := spec("r", "rec", now())
	s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(20 * time.Millisecond), Max: durationpb.New(40 * time.Millisecond)}
	task := h.schedule(s)
	got := h.waitState("r", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	calls := h.rec.of(task.Id)
	if len(calls) != 3 {
		t.Fatalf("ran %d times, want 3", len(calls))
	}
	for i, c := range calls {
		if c.Attempt != i+1 || !c.Fire.Equal(calls[0].Fire) {
			t.Errorf("call %d: attempt %d fire %s, want attempt %d of the same fire time", i, c.Attempt, c.Fire, i+1)
		}
		if i > 0 {
			if gap := c.Start.Sub(calls[i-1].Start); gap < 10*time.Millisecond {
				t.Errorf("retry %d came %s after the previous attempt, want at least half the backoff", i, gap)
			}
			if c.Run <= calls[i-1].Run {
				t.Errorf("run numbers must grow: %d after %d", c.Run, calls[i-1].Run)
			}
		}
	}
	if got.LastRun.Outcome != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Errorf("last outcome %s", got.LastRun.Outcome)
	}
	runs := h.runs("r", task.Id)
	if len(runs) != 3 || runs[2].Outcome != taskdv1.Outcome_OUTCOME_ERROR || runs[2].Message != "transient" {
		t.Errorf("history %v, want ERROR transient first", runs)
	}
	if !h.ev.has(taskservice.EventRetryScheduled, task.Id) {
		t.Error("no RETRY_SCHEDULED event")
	}
}

func TestMaxAttemptsMakesTaskDead(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(context.Context, *taskservice.Run, int) error { return errors.New("always") }
	s := spec("d", "rec", now())
	s.MaxAttempts = 3
	s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(5 * time.Millisecond), Max: durationpb.New(5 * time.Millisecond)}
	task := h.schedule(s)
	got := h.waitState("d", task.Id, taskdv1.TaskState_TASK_STATE_DEAD)
	if n := len(h.rec.of(task.Id)); n != 3 {
		t.Fatalf("ran %d times, want 3", n)
	}
	if got.FinishedAt == nil || got.LastRun.Outcome != taskdv1.Outcome_OUTCOME_ERROR {
		t.Errorf("dead task %v: want finished_at and last outcome ERROR", got)
	}
}

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

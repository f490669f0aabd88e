package taskservice_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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

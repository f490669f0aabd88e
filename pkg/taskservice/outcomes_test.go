package taskservice_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// One test per outcome a handler can ask for, over a real node and etcd:
// the stored task, its run history and the node's events.

const (
	evFired     = taskservice.EventFired
	evStarted   = taskservice.EventStarted
	evSucceeded = taskservice.EventSucceeded
	evFailed    = taskservice.EventFailed
	evRetry     = taskservice.EventRetryScheduled
	evNext      = taskservice.EventNextScheduled
	evFinal     = taskservice.EventFinalized
)

// ofTask returns the events of one task, in order.
func (e *events) ofTask(taskID string) []taskservice.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []taskservice.Event
	for _, ev := range e.evs {
		if ev.TaskID == taskID {
			out = append(out, ev)
		}
	}
	return out
}

// waitEvents waits for the task's events to number len(want), then checks
// them against want, and that nothing more comes once the task is final.
func waitEvents(h *harness, taskID string, want ...taskservice.EventType) []taskservice.Event {
	h.t.Helper()
	tst.Eventually(h.t, 20*time.Second, func() bool { return len(h.ev.types(taskID)) >= len(want) },
		"%d events of task %s (have %v)", len(want), taskID, h.ev.types(taskID))
	got := h.ev.ofTask(taskID)
	if fmt.Sprint(h.ev.types(taskID)) != fmt.Sprint(want) {
		h.t.Errorf("events %v\nwant   %v", h.ev.types(taskID), want)
	}
	return got
}

// runSeq repeats one run's events: FIRED, STARTED, outcome, next.
func runSeq(outcome, next taskservice.EventType) []taskservice.EventType {
	return []taskservice.EventType{evFired, evStarted, outcome, next}
}

func seqs(parts ...[]taskservice.EventType) []taskservice.EventType {
	var out []taskservice.EventType
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func describe(runs []*taskdv1.Run) string {
	var b strings.Builder
	for _, r := range runs {
		fmt.Fprintf(&b, "\n  run %d attempt %d %s %q manual=%v fire=%s", r.RunNumber, r.Attempt, r.Outcome, r.Message,
			r.Manual, r.FireTime.AsTime().Format("15:04:05.000"))
	}
	return b.String()
}

func TestOutcomeWarning(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(context.Context, *taskservice.Run, int) error { return taskservice.Warning("disk almost full") }
	task := h.schedule(spec("w", "rec", now()))
	got := h.waitState("w", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	waitEvents(h, task.Id, runSeq(evSucceeded, evFinal)...)
	runs := h.runs("w", task.Id)
	if len(runs) != 1 || runs[0].Outcome != taskdv1.Outcome_OUTCOME_WARNING || runs[0].Message != "disk almost full" {
		t.Fatalf("history %s: want one WARNING with the message", describe(runs))
	}
	if got.LastRun.Outcome != taskdv1.Outcome_OUTCOME_WARNING || got.FinishedAt == nil || len(h.rec.of(task.Id)) != 1 {
		t.Errorf("task %v: want COMPLETED after one WARNING run", got)
	}
}

// Retry(err) and a plain error are the same: retried after backoff for the
// same fire time, each retry a new run number and the next attempt, DEAD at
// max_attempts.
func TestOutcomeRetryThenDead(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(_ context.Context, r *taskservice.Run, n int) error {
		if n%2 == 1 {
			return taskservice.Retry(fmt.Errorf("retry %d", r.Attempt))
		}
		return fmt.Errorf("plain %d", r.Attempt)
	}
	s := spec("r", "rec", now())
	s.MaxAttempts = 3
	s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(100 * time.Millisecond), Max: durationpb.New(time.Second)}
	task := h.schedule(s)
	got := h.waitState("r", task.Id, taskdv1.TaskState_TASK_STATE_DEAD)
	evs := waitEvents(h, task.Id, seqs(runSeq(evFailed, evRetry), runSeq(evFailed, evRetry), runSeq(evFailed, evFinal))...)
	calls := h.rec.of(task.Id)
	if len(calls) != 3 {
		t.Fatalf("handler called %d times, want 3", len(calls))
	}
	runs := h.runs("r", task.Id)
	want := []string{"retry 3", "plain 2", "retry 1"} // newest first
	if len(runs) != 3 {
		t.Fatalf("history %s: want 3 runs", describe(runs))
	}
	for i, r := range runs {
		k := int64(3 - i)
		if r.RunNumber != k || r.Attempt != int32(k) || r.Outcome != taskdv1.Outcome_OUTCOME_ERROR || r.Message != want[i] ||
			!r.FireTime.AsTime().Equal(runs[2].FireTime.AsTime()) {
			t.Errorf("history %s: want runs 3,2,1 = attempts 3,2,1 of one fire time, ERROR %v", describe(runs), want)
			break
		}
	}
	// No retry starts before the time its RETRY_SCHEDULED event gave.
	var retryAt []time.Time
	for _, ev := range evs {
		if ev.Type == evRetry {
			retryAt = append(retryAt, ev.Next)
		}
	}
	for i, at := range retryAt {
		if c := calls[i+1]; c.Start.Before(at) {
			t.Errorf("attempt %d started at %s, before its retry time %s", c.Attempt, c.Start.Format("15:04:05.000"), at.Format("15:04:05.000"))
		}
	}
	if got.FinishedAt == nil || got.LastRun.Outcome != taskdv1.Outcome_OUTCOME_ERROR || got.NextFireTime != nil {
		t.Errorf("dead task %v: want finished, last ERROR, no retry", got)
	}
}

// Permanent is not retried: a periodic task goes on with its next fire
// time, a one-shot task ends.
func TestOutcomePermanent(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(_ context.Context, r *taskservice.Run, n int) error {
		if n == 1 {
			return taskservice.Permanent(errors.New("bad payload"))
		}
		return nil
	}
	task := h.schedule(spec("perm", "rec", every(time.Now(), 100*time.Millisecond, 2)))
	h.waitState("perm", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	waitEvents(h, task.Id, seqs(runSeq(evFailed, evNext), runSeq(evSucceeded, evFinal))...)
	runs := h.runs("perm", task.Id)
	if len(runs) != 2 || runs[1].Outcome != taskdv1.Outcome_OUTCOME_ERROR || runs[1].Message != "bad payload" ||
		runs[1].Attempt != 1 || runs[0].Attempt != 1 || runs[0].Outcome != taskdv1.Outcome_OUTCOME_SUCCESS ||
		runs[0].FireTime.AsTime().Equal(runs[1].FireTime.AsTime()) {
		t.Fatalf("history %s: want ERROR on fire time 1, then SUCCESS on fire time 2, both first attempts", describe(runs))
	}
}

// A task whose last run failed never reads COMPLETED: a once task that
// fails permanently, and one whose max_attempts of 2 are used up, are
// DEAD (before the fix the first read COMPLETED), and a DEAD task runs
// again by RunTaskNow: a failed re-run leaves it DEAD, a good one
// COMPLETED.
func TestOutcomeFailedTaskIsDeadAndRunsAgain(t *testing.T) {
	h := newHarness(t, nil)
	var mu sync.Mutex
	fixed := false // the cause of the failures is mended
	h.rec.behave = func(_ context.Context, r *taskservice.Run, n int) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case fixed:
			return nil
		case r.Identity == "dead-perm":
			return taskservice.Permanent(errors.New("bad payload"))
		}
		return fmt.Errorf("boom %d", r.Attempt)
	}
	perm := h.schedule(spec("dead-perm", "rec", now()))
	s := spec("dead-retry", "rec", now())
	s.MaxAttempts = 2
	s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(20 * time.Millisecond), Max: durationpb.New(20 * time.Millisecond)}
	retried := h.schedule(s)

	got := h.waitState("dead-perm", perm.Id, taskdv1.TaskState_TASK_STATE_DEAD)
	waitEvents(h, perm.Id, runSeq(evFailed, evFinal)...)
	if runs := h.runs("dead-perm", perm.Id); len(runs) != 1 || runs[0].Outcome != taskdv1.Outcome_OUTCOME_ERROR ||
		got.FinishedAt == nil || got.LastRun.GetOutcome() != taskdv1.Outcome_OUTCOME_ERROR {
		t.Fatalf("permanent: task %v history %s: want DEAD after one ERROR", got, describe(runs))
	}
	got = h.waitState("dead-retry", retried.Id, taskdv1.TaskState_TASK_STATE_DEAD)
	waitEvents(h, retried.Id, seqs(runSeq(evFailed, evRetry), runSeq(evFailed, evFinal))...)
	runs := h.runs("dead-retry", retried.Id)
	if len(runs) != 2 || runs[0].Outcome != taskdv1.Outcome_OUTCOME_ERROR || runs[1].Outcome != taskdv1.Outcome_OUTCOME_ERROR ||
		runs[0].Attempt != 2 || runs[1].Attempt != 1 || got.RunCount != 2 {
		t.Fatalf("retried: task %v history %s: want DEAD after attempts 1 and 2, both ERROR", got, describe(runs))
	}

	runNow := func(id, taskID string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := h.node.Client.RunTaskNow(ctx, &taskdv1.RunTaskNowRequest{Identity: id, TaskId: taskID}); err != nil {
			t.Fatalf("run-now of DEAD task %s: %v", taskID, err)
		}
	}
	// Still failing: the re-run is recorded and the task stays DEAD.
	runNow("dead-perm", perm.Id)
	tst.Eventually(t, 20*time.Second, func() bool { return len(h.runs("dead-perm", perm.Id)) == 2 }, "the re-run of %s", perm.Id)
	if got := h.waitState("dead-perm", perm.Id, taskdv1.TaskState_TASK_STATE_DEAD); got.LastRun.GetOutcome() != taskdv1.Outcome_OUTCOME_ERROR {
		t.Errorf("failed re-run: last run %v, want ERROR", got.LastRun)
	}
	// Mended: a re-run succeeds and the task is COMPLETED.
	mu.Lock()
	fixed = true
	mu.Unlock()
	for _, tk := range []*taskdv1.Task{perm, retried} {
		runNow(tk.Spec.Identity, tk.Id)
		got := h.waitState(tk.Spec.Identity, tk.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
		runs := h.runs(tk.Spec.Identity, tk.Id)
		if got.LastRun.GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS || len(runs) == 0 || !runs[0].Manual {
			t.Errorf("re-run of %s: last run %v history %s, want a manual SUCCESS", tk.Spec.Identity, got.LastRun, describe(runs))
		}
	}
}

// RetryAt(err, at) is a retry that waits until at when the backoff would
// come sooner (a webhook's Retry-After), and uses an attempt.
func TestOutcomeRetryAt(t *testing.T) {
	h := newHarness(t, nil)
	var mu sync.Mutex
	var notBefore time.Time
	h.rec.behave = func(_ context.Context, r *taskservice.Run, n int) error {
		if n == 1 {
			mu.Lock()
			notBefore = time.Now().Add(300 * time.Millisecond)
			mu.Unlock()
			return taskservice.RetryAt(errors.New("busy"), notBefore)
		}
		return nil
	}
	s := spec("ra", "rec", now())
	s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(time.Millisecond), Max: durationpb.New(time.Millisecond)}
	task := h.schedule(s)
	h.waitState("ra", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	evs := waitEvents(h, task.Id, seqs(runSeq(evFailed, evRetry), runSeq(evSucceeded, evFinal))...)
	mu.Lock()
	defer mu.Unlock()
	if !evs[3].Next.Equal(notBefore) {
		t.Errorf("RETRY_SCHEDULED for %s, want the handler's time %s", evs[3].Next, notBefore)
	}
	calls := h.rec.of(task.Id)
	if len(calls) != 2 || calls[1].Start.Before(notBefore) || calls[1].Attempt != 2 {
		t.Fatalf("calls %+v: want attempt 2 at or after %s", calls, notBefore)
	}
}

// Cancel from the handler ends the task: CANCELED, no more runs.
func TestOutcomeCancel(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(_ context.Context, r *taskservice.Run, n int) error {
		if r.RunNumber == 2 {
			return taskservice.Cancel("enough")
		}
		return nil
	}
	task := h.schedule(spec("cx", "rec", every(time.Now(), 50*time.Millisecond, 0)))
	got := h.waitState("cx", task.Id, taskdv1.TaskState_TASK_STATE_CANCELED)
	waitEvents(h, task.Id, seqs(runSeq(evSucceeded, evNext), runSeq(evFailed, evFinal))...)
	// A later task of the identity runs: by then the cancelled one would
	// have had several more periods.
	probe := h.schedule(spec("cx", "rec", after(300*time.Millisecond)))
	h.waitState("cx", probe.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if n := len(h.rec.of(task.Id)); n != 2 {
		t.Fatalf("cancelled task ran %d times, want 2", n)
	}
	runs := h.runs("cx", task.Id)
	if len(runs) != 2 || runs[0].Outcome != taskdv1.Outcome_OUTCOME_CANCELED || runs[0].Message != "enough" {
		t.Fatalf("history %s: want CANCELED \"enough\" last", describe(runs))
	}
	if got.FinishedAt == nil || got.NextFireTime != nil {
		t.Errorf("cancelled task %v: want finished, no next fire time", got)
	}
	if types := h.ev.types(task.Id); len(types) != 8 {
		t.Errorf("events after the cancel: %v", types)
	}
}

// Snooze(t) runs the same fire time again at t, using no attempt.
func TestOutcomeSnooze(t *testing.T) {
	h := newHarness(t, nil)
	var mu sync.Mutex
	var until time.Time
	h.rec.behave = func(_ context.Context, r *taskservice.Run, n int) error {
		if n == 1 {
			mu.Lock()
			until = time.Now().Add(300 * time.Millisecond)
			mu.Unlock()
			return taskservice.Snooze(until)
		}
		return nil
	}
	s := spec("sz", "rec", now())
	s.MaxAttempts = 1 // a snooze that used an attempt would leave none
	task := h.schedule(s)
	h.waitState("sz", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	evs := waitEvents(h, task.Id, seqs(runSeq(evSucceeded, evRetry), runSeq(evSucceeded, evFinal))...)
	mu.Lock()
	defer mu.Unlock()
	if !evs[3].Next.Equal(until) {
		t.Errorf("RETRY_SCHEDULED for %s, want the snooze time %s", evs[3].Next, until)
	}
	calls := h.rec.of(task.Id)
	if len(calls) != 2 || calls[1].Start.Before(until) {
		t.Fatalf("calls %+v: want a second call at or after the snooze time %s", calls, until)
	}
	if calls[1].Attempt != 1 || calls[1].Run != 2 || !calls[1].Fire.Equal(calls[0].Fire) {
		t.Errorf("second call %+v: want run 2, attempt 1 of the same fire time", calls[1])
	}
	runs := h.runs("sz", task.Id)
	if len(runs) != 2 || runs[1].Outcome != taskdv1.Outcome_OUTCOME_WARNING || !strings.Contains(runs[1].Message, "snoozed") ||
		runs[0].Outcome != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Errorf("history %s: want a snoozed WARNING, then SUCCESS", describe(runs))
	}
}

// Snooze(time.Time{}) runs the same fire time again at once; it does not
// finish the fire time.
func TestOutcomeSnoozeZero(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(_ context.Context, r *taskservice.Run, n int) error {
		if n == 1 {
			return taskservice.Snooze(time.Time{})
		}
		return nil
	}
	s := spec("sz0", "rec", now())
	s.MaxAttempts = 1
	task := h.schedule(s)
	h.waitState("sz0", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	waitEvents(h, task.Id, seqs(runSeq(evSucceeded, evRetry), runSeq(evSucceeded, evFinal))...)
	calls := h.rec.of(task.Id)
	if len(calls) != 2 || calls[1].Attempt != 1 || !calls[1].Fire.Equal(calls[0].Fire) {
		t.Fatalf("calls %+v: want the same fire time called again, attempt 1", calls)
	}
	if runs := h.runs("sz0", task.Id); len(runs) != 2 || runs[0].Outcome != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Errorf("history %s: want the snooze then SUCCESS", describe(runs))
	}
}

// RunAgainNow records a success and one more (manual) run at once.
func TestOutcomeRunAgainNow(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(_ context.Context, r *taskservice.Run, n int) error {
		if n == 1 {
			return taskservice.RunAgainNow()
		}
		return nil
	}
	task := h.schedule(spec("again", "rec", now()))
	got := h.waitState("again", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	waitEvents(h, task.Id, seqs(runSeq(evSucceeded, evNext), runSeq(evSucceeded, evFinal))...)
	calls := h.rec.of(task.Id)
	if len(calls) != 2 || calls[0].Manual || !calls[1].Manual || calls[1].Run != 2 {
		t.Fatalf("calls %+v: want the scheduled run, then a manual run 2", calls)
	}
	runs := h.runs("again", task.Id)
	if len(runs) != 2 || runs[1].Outcome != taskdv1.Outcome_OUTCOME_SUCCESS || !runs[0].Manual {
		t.Errorf("history %s: want SUCCESS then a manual run", describe(runs))
	}
	if got.RunCount != 2 {
		t.Errorf("run_count %d, want 2", got.RunCount)
	}
}

// SetData is stored with the run's outcome, whatever the outcome: the next
// attempt sees what the failed one stored.
func TestOutcomeSetDataPersisted(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(_ context.Context, r *taskservice.Run, n int) error {
		r.SetData([]byte(fmt.Sprintf("%s+%d", r.Data, r.Attempt)))
		switch n {
		case 1:
			return errors.New("transient")
		case 2:
			return taskservice.Warning("slow")
		}
		return taskservice.Cancel("done")
	}
	s := spec("data", "rec", every(time.Now(), 50*time.Millisecond, 0))
	s.Data = []byte("seed")
	s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(20 * time.Millisecond)}
	task := h.schedule(s)
	got := h.waitState("data", task.Id, taskdv1.TaskState_TASK_STATE_CANCELED)
	waitEvents(h, task.Id, seqs(runSeq(evFailed, evRetry), runSeq(evSucceeded, evNext), runSeq(evFailed, evFinal))...)
	calls := h.rec.of(task.Id)
	want := []string{"seed", "seed+1", "seed+1+2"}
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3", len(calls))
	}
	for i, c := range calls {
		if c.Data != want[i] {
			t.Errorf("call %d saw data %q, want %q", i+1, c.Data, want[i])
		}
	}
	if string(got.Spec.Data) != "seed+1+2+1" {
		t.Errorf("stored data %q, want seed+1+2+1 (set by the cancelling run)", got.Spec.Data)
	}
}

// SetMessage sets the history message, over the one the outcome would give.
func TestOutcomeSetMessage(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(_ context.Context, r *taskservice.Run, n int) error {
		if n == 1 {
			r.SetMessage("upstream said 503")
			return taskservice.Permanent(errors.New("raw error text"))
		}
		r.SetMessage("42 rows")
		return nil
	}
	task := h.schedule(spec("msg", "rec", every(time.Now(), 50*time.Millisecond, 2)))
	got := h.waitState("msg", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	evs := waitEvents(h, task.Id, seqs(runSeq(evFailed, evNext), runSeq(evSucceeded, evFinal))...)
	runs := h.runs("msg", task.Id)
	if len(runs) != 2 || runs[1].Message != "upstream said 503" || runs[0].Message != "42 rows" {
		t.Fatalf("history %s: want the handler's messages", describe(runs))
	}
	if got.LastRun.Message != "42 rows" || evs[2].Message != "upstream said 503" {
		t.Errorf("last run %v, event message %q: want the handler's messages", got.LastRun, evs[2].Message)
	}
}

// A panic is an error: recorded, retried, and the node goes on.
func TestOutcomePanicIsRetried(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(_ context.Context, r *taskservice.Run, n int) error {
		if n == 1 {
			panic("nil map")
		}
		return nil
	}
	s := spec("panic", "rec", now())
	s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(20 * time.Millisecond)}
	task := h.schedule(s)
	h.waitState("panic", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	waitEvents(h, task.Id, seqs(runSeq(evFailed, evRetry), runSeq(evSucceeded, evFinal))...)
	runs := h.runs("panic", task.Id)
	if len(runs) != 2 || runs[1].Outcome != taskdv1.Outcome_OUTCOME_ERROR || !strings.Contains(runs[1].Message, "nil map") ||
		runs[0].Attempt != 2 || runs[0].Outcome != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Fatalf("history %s: want the panic as an ERROR, then attempt 2 SUCCESS", describe(runs))
	}
	if h.node.State() != taskdv1.NodeState_NODE_STATE_RUNNING {
		t.Errorf("node %s after a panicking handler", h.node.State())
	}
}

// A handler that ignores its timeout and returns nil late is still timed
// out: an ERROR, retried; no other run of the task starts meanwhile.
func TestOutcomeHandlerIgnoringTimeout(t *testing.T) {
	h := newHarness(t, nil)
	const timeout = 100 * time.Millisecond
	var sawDeadline bool
	var mu sync.Mutex
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		if n == 1 {
			time.Sleep(3 * timeout) // the handler's own work, deaf to ctx
			mu.Lock()
			sawDeadline = ctx.Err() != nil
			mu.Unlock()
			return nil
		}
		return nil
	}
	s := spec("deaf", "rec", now())
	s.Timeout = durationpb.New(timeout)
	s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(20 * time.Millisecond)}
	task := h.schedule(s)
	h.waitState("deaf", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	waitEvents(h, task.Id, seqs(runSeq(evFailed, evRetry), runSeq(evSucceeded, evFinal))...)
	mu.Lock()
	defer mu.Unlock()
	if !sawDeadline {
		t.Error("the handler's context was not done at its timeout")
	}
	runs := h.runs("deaf", task.Id)
	if len(runs) != 2 || runs[1].Outcome != taskdv1.Outcome_OUTCOME_ERROR || !strings.Contains(runs[1].Message, "timed out") ||
		runs[0].Outcome != taskdv1.Outcome_OUTCOME_SUCCESS || runs[0].Attempt != 2 {
		t.Fatalf("history %s: want a timed-out ERROR, then attempt 2 SUCCESS", describe(runs))
	}
	// The retry began only after the late handler returned.
	if calls := h.rec.of(task.Id); !calls[1].Start.After(runs[1].EndedAt.AsTime()) {
		t.Errorf("attempt 2 started at %s, before attempt 1 ended at %s", calls[1].Start, runs[1].EndedAt.AsTime())
	}
}

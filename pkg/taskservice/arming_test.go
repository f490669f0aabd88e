package taskservice_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The tests of look-ahead arming (arming.go). Each arms a run with a long
// look-ahead and a fire time far enough away that the start is written
// well before it, checks that it was (the task is RUNNING while its fire
// time has not come and its handler has not been called), then does what
// the test is about before the fire time.

const (
	armAhead = 5 * time.Second         // the look-ahead of these tests
	armDue   = 2500 * time.Millisecond // how far ahead their runs are due
)

func armConfig(c *taskservice.Config) { c.LookAhead = armAhead }

// waitArmed waits until task's start is written ahead of its fire time,
// and fails the test if the fire time came first (then the test would not
// exercise an armed run).
func waitArmed(t *testing.T, n *tst.Node, rec *recorder, id string, task *taskdv1.Task, fire time.Time) {
	t.Helper()
	tst.Eventually(t, 10*time.Second, func() bool {
		return getTask(t, n, id, task.Id).State == taskdv1.TaskState_TASK_STATE_RUNNING
	}, "task %s to be armed", task.Id)
	if now := time.Now(); !now.Before(fire) || len(rec.of(task.Id)) != 0 {
		t.Fatalf("task %s armed at %s, fire time %s, %d calls: the start was not written ahead",
			task.Id, now, fire, len(rec.of(task.Id)))
	}
}

// barrier schedules a task of identity id due just after fire and waits
// until it ran: by then every run of id due at fire has had its chance.
func barrier(t *testing.T, n *tst.Node, rec *recorder, id string, fire time.Time) {
	t.Helper()
	b := scheduleOn(t, n, spec(id, "rec", once(fire.Add(200*time.Millisecond))))
	tst.Eventually(t, 20*time.Second, func() bool { return len(rec.of(b.Id)) == 1 }, "the barrier task to run")
}

func TestArmedRunIsCalledAtItsFireTime(t *testing.T) {
	e := tst.StartEtcd(t)
	rec, ev := &recorder{}, &events{}
	n := faultNode(t, e, "n1", nil, rec, ev, armConfig)
	fire := time.Now().Add(armDue).Truncate(time.Millisecond)
	task := scheduleOn(t, n, spec("armed", "rec", once(fire)))
	waitArmed(t, n, rec, "armed", task, fire)
	waitTaskState(t, n, "armed", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	calls := rec.of(task.Id)
	if len(calls) != 1 || calls[0].Run != 1 || calls[0].Recovery || calls[0].Start.Before(fire) {
		t.Fatalf("calls %+v: want one call of run 1, not a recovery, not before %s", calls, fire)
	}
	wantHistory(t, n, "armed", task.Id, taskdv1.Outcome_OUTCOME_SUCCESS)
	tst.Eventually(t, 5*time.Second, func() bool { return ev.has(taskservice.EventFinalized, task.Id) }, "FINALIZED")
	want := []taskservice.EventType{taskservice.EventFired, taskservice.EventStarted, taskservice.EventSucceeded, taskservice.EventFinalized}
	if got := ev.types(task.Id); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func TestArmedRunOfACancelledTaskIsNotCalled(t *testing.T) {
	e := tst.StartEtcd(t)
	rec := &recorder{}
	n := faultNode(t, e, "n1", nil, rec, nil, armConfig)
	fire := time.Now().Add(armDue)
	task := scheduleOn(t, n, spec("cancelled", "rec", once(fire)))
	waitArmed(t, n, rec, "cancelled", task, fire)
	ctx, cancel := rpc()
	defer cancel()
	if _, err := n.CancelTask(ctx, "cancelled", task.Id); err != nil {
		t.Fatal(err)
	}
	barrier(t, n, rec, "cancelled", fire)
	got := getTask(t, n, "cancelled", task.Id)
	if len(rec.of(task.Id)) != 0 || got.State != taskdv1.TaskState_TASK_STATE_CANCELED || got.RunCount != 0 {
		t.Fatalf("calls %v, task %v: want no call, CANCELED with no run counted", rec.of(task.Id), got)
	}
	wantHistory(t, n, "cancelled", task.Id) // the armed run left no trace
}

func TestArmedRunOfAPausedIdentityWaitsForTheResume(t *testing.T) {
	e := tst.StartEtcd(t)
	rec := &recorder{}
	n := faultNode(t, e, "n1", nil, rec, nil, armConfig)
	fire := time.Now().Add(armDue)
	task := scheduleOn(t, n, spec("paused", "rec", once(fire)))
	other := scheduleOn(t, n, spec("other", "rec", once(fire)))
	waitArmed(t, n, rec, "paused", task, fire)
	ctx, cancel := rpc()
	defer cancel()
	if _, err := n.PauseIdentity(ctx, "paused"); err != nil {
		t.Fatal(err)
	}
	// Past the fire time (the other identity's run of the same instant has
	// been called), the paused identity's run has not.
	tst.Eventually(t, 20*time.Second, func() bool { return len(rec.of(other.Id)) == 1 }, "the other identity's run")
	tst.Eventually(t, 10*time.Second, func() bool {
		return getTask(t, n, "paused", task.Id).State == taskdv1.TaskState_TASK_STATE_PAUSED
	}, "the task to show PAUSED")
	if calls := rec.of(task.Id); len(calls) != 0 {
		t.Fatalf("calls %v while paused", calls)
	}
	if err := n.ResumeIdentity(ctx, "paused"); err != nil {
		t.Fatal(err)
	}
	waitTaskState(t, n, "paused", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if calls := rec.of(task.Id); len(calls) != 1 || calls[0].Run != 1 || calls[0].Recovery {
		t.Fatalf("calls %+v: want one call of run 1 after the resume, not a recovery", calls)
	}
	wantHistory(t, n, "paused", task.Id, taskdv1.Outcome_OUTCOME_SUCCESS)
}

func TestArmedRunOfAMovedIdentityRunsOnceOnTheNewOwner(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, armConfig)
	fire := time.Now().Add(armDue)
	task := c.schedule("a", spec("moved", "rec", once(fire)))
	waitArmed(t, c.nodes["a"], c.rec, "moved", task, fire)
	c.move("a", "moved", "b")
	waitTaskState(t, c.nodes["b"], "moved", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if got := c.nodesOf(task.Id); fmt.Sprint(got) != "[b]" {
		t.Fatalf("ran on %v, want exactly once on b", got)
	}
	// The old owner's armed start, not called, is settled by the new owner
	// as a run whose handler was not called: its fire time, run 1, flagged
	// as a recovery (docs/contract.md §5.8).
	if s := c.rec.of(task.Id)[0]; s.Start.Before(fire) || s.Run != 1 || !s.Recovery {
		t.Fatalf("call %+v: want run 1, a recovery, not before its fire time %s", s, fire)
	}
}

func TestArmedRunsOfAStoppedNodeRunOnceAfterItsRestart(t *testing.T) {
	e := tst.StartEtcd(t)
	rec := &recorder{}
	first := faultNode(t, e, "n1", nil, rec, nil, armConfig)
	fire := time.Now().Add(armDue)
	task := scheduleOn(t, first, spec("stopped", "rec", once(fire)))
	waitArmed(t, first, rec, "stopped", task, fire)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := first.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := rec.of(task.Id); len(calls) != 0 {
		t.Fatalf("calls %v: the stopping node called its armed run", calls)
	}
	second := faultNode(t, e, "n1", nil, rec, nil, armConfig)
	waitTaskState(t, second, "stopped", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if calls := rec.of(task.Id); len(calls) != 1 || calls[0].Run != 1 || calls[0].Recovery || calls[0].Start.Before(fire) {
		t.Fatalf("calls %+v: want one call of run 1, not a recovery, not before %s", calls, fire)
	}
	wantHistory(t, second, "stopped", task.Id, taskdv1.Outcome_OUTCOME_SUCCESS)
}

// The read that confirms an armed run at its fire time is answered only
// after the node's lease margin: the handler is not called then, the start
// is undone, and the fire time runs once (run 1) under a start of its own.
func TestArmedRunWhoseConfirmationIsLateIsNotCalledThen(t *testing.T) {
	e := tst.StartEtcd(t)
	in := etcdfault.New()
	rec := &recorder{}
	n := faultNode(t, e, "n1", in, rec, nil, armConfig)
	fire := time.Now().Add(armDue)
	task := scheduleOn(t, n, spec("late", "rec", once(fire)))
	waitArmed(t, n, rec, "late", task, fire)
	// The start is written: the next fenced Txn of the task is the read
	// that confirms it.
	delayed := in.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Prefix: "/taskd/task/late/" + task.Id, Times: 1,
		Match: isStart("late"), Action: etcdfault.DelayAfter(3 * time.Second)})
	waitTaskState(t, n, "late", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if delayed.Hits() != 1 {
		t.Fatalf("the confirmation was delayed %d times, want 1", delayed.Hits())
	}
	if calls := rec.of(task.Id); len(calls) != 1 || calls[0].Run != 1 || calls[0].Recovery {
		t.Fatalf("calls %+v: want one call of run 1, not a recovery", calls)
	}
	wantHistory(t, n, "late", task.Id, taskdv1.Outcome_OUTCOME_SUCCESS)
}

// A burst due at one instant is armed ahead and called in the identity's
// order (due time, then priority, then creation).
func TestArmedBurstKeepsPerIdentityOrder(t *testing.T) {
	e := tst.StartEtcd(t)
	rec := &recorder{}
	n := faultNode(t, e, "n1", nil, rec, nil, func(c *taskservice.Config) { c.LookAhead = armAhead; c.Workers = 1 })
	fire := time.Now().Add(armDue)
	var want []string
	var tasks []*taskdv1.Task
	for i := range 40 {
		s := spec("burst", "rec", once(fire))
		s.Priority = int32(i % 3)
		tasks = append(tasks, scheduleOn(t, n, s))
	}
	for prio := int32(2); prio >= 0; prio-- {
		for _, task := range tasks {
			if task.Spec.Priority == prio {
				want = append(want, task.Id)
			}
		}
	}
	waitArmed(t, n, rec, "burst", tasks[len(tasks)-1], fire)
	tst.Eventually(t, 20*time.Second, func() bool { return len(rec.all()) == len(tasks) },
		"every run of the burst")
	var got []string
	for _, s := range rec.all() {
		got = append(got, s.TaskID)
		if s.Start.Before(fire) {
			t.Fatalf("task %s called at %s, before its fire time %s", s.TaskID, s.Start, fire)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("call order\n%v\nwant\n%v", got, want)
	}
}

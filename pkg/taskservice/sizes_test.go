package taskservice_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file tests the size limits of sizes.go that are not request fields
// (those are in integration/limits_test.go, TestBadInputs): a handler's
// output, and the calendar references of non-durable tasks.

// TestHandlerOutputLimits: a Go handler that sets data over --max-payload,
// or snoozes or asks for its retry past MaxInstant, gets a failed run
// saying so (before: the data or the instant was committed as given); a
// long message is cut with a marker.
func TestHandlerOutputLimits(t *testing.T) {
	e := tst.StartEtcd(t)
	const maxPayload = 1 << 10
	var behave = map[string]func(r *taskservice.Run) error{
		"data-too-large": func(r *taskservice.Run) error { r.SetData(make([]byte, maxPayload+1)); return nil },
		"data-at-limit":  func(r *taskservice.Run) error { r.SetData(make([]byte, maxPayload)); return nil },
		"snooze-too-far": func(r *taskservice.Run) error { return taskservice.Snooze(taskservice.MaxInstant.Add(time.Hour)) },
		"retry-too-far": func(r *taskservice.Run) error {
			return taskservice.RetryAt(errors.New("later"), taskservice.MaxInstant.Add(time.Hour))
		},
		"long-message": func(r *taskservice.Run) error {
			return taskservice.Permanent(errors.New(strings.Repeat("é", taskservice.MaxMessage)))
		},
	}
	n := tst.StartNode(t, e.Client(t), taskservice.Config{Name: "n1", MaxPayload: maxPayload,
		Handlers: map[string]taskservice.Handler{"h": taskservice.HandlerFunc(func(ctx context.Context, r *taskservice.Run) error {
			return behave[r.Identity](r)
		})}})
	ctx := apiCtx(t)
	for _, tc := range []struct {
		id, want string
		state    taskdv1.TaskState
	}{
		{"data-too-large", fmt.Sprintf("data too large: %d bytes > limit %d", maxPayload+1, maxPayload), taskdv1.TaskState_TASK_STATE_DEAD},
		{"data-at-limit", "", taskdv1.TaskState_TASK_STATE_COMPLETED},
		{"snooze-too-far", "snooze_until too far", taskdv1.TaskState_TASK_STATE_DEAD},
		{"retry-too-far", "retry time too far", taskdv1.TaskState_TASK_STATE_DEAD},
		// A permanent failure of a once task: DEAD, not COMPLETED.
		{"long-message", fmt.Sprintf("[cut: the message was %d bytes, the limit is %d]", 2*taskservice.MaxMessage, taskservice.MaxMessage), taskdv1.TaskState_TASK_STATE_DEAD},
	} {
		t.Run(tc.id, func(t *testing.T) {
			s := apiSpec(tc.id)
			s.Kind, s.MaxAttempts, s.Data = "h", 1, []byte("kept")
			s.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}}
			resp, err := n.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
			if err != nil {
				t.Fatal(err)
			}
			var got *taskdv1.Task
			tst.Eventually(t, 20*time.Second, func() bool {
				g, err := n.Client.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: tc.id, TaskId: resp.Task.Id})
				got = g.GetTask()
				return err == nil && (got.State == taskdv1.TaskState_TASK_STATE_DEAD || got.State == taskdv1.TaskState_TASK_STATE_COMPLETED)
			}, "task %s to finish", tc.id)
			msg := got.GetLastRun().GetMessage()
			if got.State != tc.state || !strings.Contains(msg, tc.want) || len(msg) > taskservice.MaxMessage {
				t.Fatalf("task %s, message of %d bytes %.200q; want %s saying %q", got.State, len(msg), msg, tc.state, tc.want)
			}
			if tc.state == taskdv1.TaskState_TASK_STATE_DEAD && string(got.Spec.GetData()) != "kept" {
				t.Fatalf("a refused outcome changed the task's data to %d bytes", len(got.Spec.GetData()))
			}
		})
	}
}

// localSpec is a non-durable task listing calendars that does not fire
// during a test.
func localSpec(id string, calendars ...string) *taskdv1.TaskSpec {
	s := apiSpec(id)
	s.NonDurable, s.Calendars = true, calendars
	return s
}

func createWeekly(ctx context.Context, t *testing.T, c taskdv1.TaskServiceClient, name string) {
	t.Helper()
	_, err := c.CreateCalendar(ctx, &taskdv1.CreateCalendarRequest{Calendar: &taskdv1.Calendar{Name: name,
		Kind: &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: []string{"SUN"}}}}})
	if err != nil {
		t.Fatalf("create calendar %s: %v", name, err)
	}
}

// TestNonDurableTaskHoldsItsCalendar: a calendar a non-durable task lists
// cannot be deleted while the task is kept (before: nothing referred to
// it, and DeleteCalendar removed it under the task). The reference ends
// with the task (its purge), moves with UpdateTask, survives the node
// registering again under a new lease, and ends with the node's lease.
// (integration TestNonDurableCalendarRefEndsWithKilledNode kills the node.)
func TestNonDurableTaskHoldsItsCalendar(t *testing.T) {
	e := tst.StartEtcd(t)
	cli := e.Client(t)
	noop := map[string]taskservice.Handler{"noop": taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil })}
	n1 := tst.StartNode(t, cli, taskservice.Config{Name: "n1", Handlers: noop, Retention: 200 * time.Millisecond, LeaseTTL: 2 * time.Second})
	n2 := tst.StartNode(t, cli, taskservice.Config{Name: "n2", Handlers: noop})
	ctx := apiCtx(t)
	del := func(name string) error {
		_, err := n2.Client.DeleteCalendar(ctx, &taskdv1.DeleteCalendarRequest{Name: name})
		return err
	}
	for _, name := range []string{"held", "moved", "until-stop"} {
		createWeekly(ctx, t, n1.Client, name)
	}
	sched := func(s *taskdv1.TaskSpec) *taskdv1.Task {
		t.Helper()
		resp, err := n1.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
		if err != nil {
			t.Fatalf("schedule: %v", err)
		}
		return resp.Task
	}
	held := sched(localSpec("local-a", "held"))
	moved := sched(localSpec("local-b", "moved"))
	sched(localSpec("local-c", "until-stop"))

	err := del("held")
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "non-durable task "+held.Id+" on node n1") {
		t.Fatalf("DeleteCalendar of a calendar a non-durable task lists: %v, want FAILED_PRECONDITION naming the task", err)
	}

	// A calendar deleted between validation and the reference's write is
	// the schedule's error (the write compares it exists): here, simply a
	// calendar that does not exist is refused, and nothing is queued.
	if _, err := n1.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: localSpec("local-d", "nope")}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("non-durable task listing a missing calendar: %v", err)
	}

	// The node loses its lease (as after a partition) and registers again:
	// the references are written under the new lease.
	gctx, gcancel := context.WithTimeout(ctx, 5*time.Second)
	reg, err := cli.Get(gctx, "/taskd/nodes/n1")
	gcancel()
	if err != nil || len(reg.Kvs) != 1 {
		t.Fatalf("registration: %v %v", reg, err)
	}
	oldLease := clientv3.LeaseID(reg.Kvs[0].Lease)
	if _, err := cli.Revoke(ctx, oldLease); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 20*time.Second, func() bool {
		r, err := cli.Get(ctx, "/taskd/nodes/n1")
		return err == nil && len(r.Kvs) == 1 && clientv3.LeaseID(r.Kvs[0].Lease) != oldLease
	}, "n1 to register again")
	// Registering again rewrites the references just after the record
	// (the node's Registered step): wait for the one of "held" under the
	// new lease, which is what this step is about.
	tst.Eventually(t, 20*time.Second, func() bool {
		r, err := cli.Get(ctx, "/taskd/calref/held/n/n1/", clientv3.WithPrefix())
		return err == nil && len(r.Kvs) == 1 && r.Kvs[0].Lease != 0 && clientv3.LeaseID(r.Kvs[0].Lease) != oldLease
	}, "n1 to write the reference of its non-durable task under its new lease")
	if err := del("held"); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("DeleteCalendar after the node registered again: %v, want FAILED_PRECONDITION", err)
	}

	// UpdateTask moves the reference with the task's list.
	s := localSpec("local-b")
	if _, err := n1.Client.UpdateTask(ctx, &taskdv1.UpdateTaskRequest{Identity: "local-b", TaskId: moved.Id, Spec: s}); err != nil {
		t.Fatalf("UpdateTask: %v", err)
	}
	if err := del("moved"); err != nil {
		t.Fatalf("DeleteCalendar of a calendar the task no longer lists: %v", err)
	}

	// The task ends (cancelled, then purged after its retention): so does
	// its reference.
	if _, err := n1.Client.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "local-a", TaskId: held.Id}); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 20*time.Second, func() bool { return del("held") == nil }, "the purged task's calendar to be deletable")

	// The node stops: its lease, and the references under it, end.
	if err := del("until-stop"); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("DeleteCalendar while the task is kept: %v", err)
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if err := n1.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	if err := del("until-stop"); err != nil {
		t.Fatalf("DeleteCalendar after the node holding the task stopped: %v", err)
	}
}

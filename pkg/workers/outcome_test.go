package workers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/client"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	"github.com/taskd/taskd/pkg/workers"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// lateRemote is the pool, returning each outcome to the node only once
// the run's deadline has passed: the window in which a worker's outcome
// reaches the pool just before the deadline and the node sees the
// handler's return just after it, held open.
type lateRemote struct{ *workers.Pool }

func (l lateRemote) Reserve(kind string) (taskservice.Reservation, bool) {
	r, ok := l.Pool.Reserve(kind)
	if ok && kind == "late" {
		return lateReservation{r}, true
	}
	return r, ok
}

type lateReservation struct{ taskservice.Reservation }

func (l lateReservation) Work(ctx context.Context, run *taskservice.Run) error {
	err := l.Reservation.Work(ctx, run)
	<-ctx.Done()
	return err
}

// The ack says whether the node committed the outcome as the worker
// reported it: every result reported in time is accepted; a success the
// node recorded as a timeout error (its deadline passed before the node
// saw it) is not, and the ack says what was recorded.
func TestAckSaysWhetherTheOutcomeWasCommittedAsReported(t *testing.T) {
	n, c, ctx := nodeAndClient(t, 5*time.Second,
		func(s *nodeSetup) { s.remote = func(p *workers.Pool) taskservice.Remote { return lateRemote{p} } })
	r, _, err := dialRaw(t, n.addr, &taskdv1.WorkerHello{Worker: "raw", Kinds: []string{"job", "late"}, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	answer := func(identity, kind string, result taskdv1.WorkResult, edit ...func(*client.TaskSpec)) (string, *taskdv1.WorkAck) {
		t.Helper()
		task, _, err := c.Schedule(ctx, spec(identity, kind, edit...))
		if err != nil {
			t.Fatal(err)
		}
		run := r.recvUntil(func(m *taskdv1.WorkResponse) bool { return m.GetRun() != nil }).GetRun()
		o := &taskdv1.WorkOutcome{RunId: run.GetRunId(), Fence: run.GetFence(), Result: result, Message: "reported"}
		if result == taskdv1.WorkResult_WORK_RESULT_SNOOZE {
			o.SnoozeUntil = timestamppb.New(time.Now().Add(time.Hour))
		}
		r.send(o)
		return task.ID, r.recvUntil(func(m *taskdv1.WorkResponse) bool { return m.GetAck().GetRunId() == run.GetRunId() }).GetAck()
	}
	for _, result := range []taskdv1.WorkResult{
		taskdv1.WorkResult_WORK_RESULT_SUCCESS, taskdv1.WorkResult_WORK_RESULT_WARNING, taskdv1.WorkResult_WORK_RESULT_ERROR,
		taskdv1.WorkResult_WORK_RESULT_PERMANENT, taskdv1.WorkResult_WORK_RESULT_SNOOZE, taskdv1.WorkResult_WORK_RESULT_CANCEL,
	} {
		if _, a := answer("in-time-"+strings.ToLower(result.String()), "job", result); !a.GetAccepted() {
			t.Errorf("%s reported in time: ack %v, want accepted", result, a)
		}
	}

	id, a := answer("late", "late", taskdv1.WorkResult_WORK_RESULT_SUCCESS, func(s *client.TaskSpec) { s.Timeout, s.MaxAttempts = 300*time.Millisecond, 1 })
	if a.GetAccepted() || !strings.Contains(a.GetReason(), "recorded ERROR instead of SUCCESS") || !strings.Contains(a.GetReason(), "timed out") {
		t.Fatalf("a success the node recorded as a timeout: ack %v, want not accepted, saying so", a)
	}
	runs, err := c.Runs(ctx, "late", id)
	if err != nil || len(runs) != 1 || runs[0].Outcome != "ERROR" || !strings.Contains(runs[0].Message, "timed out") {
		t.Fatalf("the late run's history: %+v %v", runs, err)
	}
	tst.Eventually(t, 5*time.Second, func() bool { return n.pool.Awaiting() == 0 }, "outcomes still await their commit")
}

// A worker's outcome that asks for what cannot be stored (issue 20): 3 MiB
// of new data, a snooze to the year 146138514283, a message of 100 KiB.
// Before the limits, the data and the snooze were committed as given: the
// commit failed (etcd refuses a request over 1.5 MiB) or stored an instant
// no arithmetic survives, and the task stayed RUNNING. Now the run fails
// saying what was too large, the task keeps its data, and a long message
// is cut with a marker.
func TestWorkerOutcomeLimits(t *testing.T) {
	n, c, ctx := nodeAndClient(t, 5*time.Second)
	r, _, err := dialRaw(t, n.addr, &taskdv1.WorkerHello{Worker: "raw", Kinds: []string{"job"}, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	isAck := func(m *taskdv1.WorkResponse) bool { return m.GetAck() != nil }
	const maxPayload = 256 << 10 // the node's default --max-payload

	for _, tc := range []struct {
		name    string
		outcome func(o *taskdv1.WorkOutcome)
		state   client.State
		want    string // in the run's message
	}{
		{"3 MiB of data", func(o *taskdv1.WorkOutcome) {
			o.Result, o.Data, o.DataSet = taskdv1.WorkResult_WORK_RESULT_SUCCESS, make([]byte, 3<<20), true
		}, client.StateDead, fmt.Sprintf("data too large: %d bytes > limit %d", 3<<20, maxPayload)},
		{"data one past --max-payload", func(o *taskdv1.WorkOutcome) {
			o.Result, o.Data, o.DataSet = taskdv1.WorkResult_WORK_RESULT_SUCCESS, make([]byte, maxPayload+1), true
		}, client.StateDead, fmt.Sprintf("data too large: %d bytes > limit %d", maxPayload+1, maxPayload)},
		{"data at --max-payload", func(o *taskdv1.WorkOutcome) {
			o.Result, o.Data, o.DataSet = taskdv1.WorkResult_WORK_RESULT_SUCCESS, make([]byte, maxPayload), true
		}, client.StateCompleted, ""},
		{"snooze to the year 146138514283", func(o *taskdv1.WorkOutcome) {
			o.Result, o.SnoozeUntil = taskdv1.WorkResult_WORK_RESULT_SNOOZE, &timestamppb.Timestamp{Seconds: 1 << 62}
		}, client.StateDead, "snooze_until too far"},
		{"snooze to the end of the instant range", func(o *taskdv1.WorkOutcome) {
			o.Result, o.SnoozeUntil = taskdv1.WorkResult_WORK_RESULT_SNOOZE, timestamppb.New(taskservice.MaxInstant)
		}, client.StateDead, "snooze_until too far"},
		{"message of 100 KiB", func(o *taskdv1.WorkOutcome) {
			// Committed as reported (cut): a permanent failure, which
			// leaves the once task DEAD.
			o.Result, o.Message = taskdv1.WorkResult_WORK_RESULT_PERMANENT, strings.Repeat("m", 100<<10)
		}, client.StateDead, fmt.Sprintf("[cut: the message was %d bytes, the limit is %d]", 100<<10, taskservice.MaxMessage)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := strings.ReplaceAll(tc.name, " ", "-")
			task, _, err := c.Schedule(ctx, spec(id, "job", func(s *client.TaskSpec) { s.MaxAttempts, s.Data = 1, []byte("kept") }))
			if err != nil {
				t.Fatal(err)
			}
			run := r.recv().GetRun()
			o := &taskdv1.WorkOutcome{RunId: run.GetRunId(), Fence: run.GetFence()}
			tc.outcome(o)
			r.send(o)
			// The ack says whether the outcome was committed as reported:
			// one the limits turned into a failed run is not.
			refused := tc.state == client.StateDead && !strings.HasPrefix(tc.want, "[cut:")
			if a := r.recvUntil(isAck).GetAck(); a.GetAccepted() == refused || refused && !strings.Contains(a.GetReason(), tc.want) {
				t.Fatalf("ack %v; want accepted=%v (a reason saying %q when refused)", a, !refused, tc.want)
			}
			got, err := c.Wait(ctx, id, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tc.state || got.LastRun == nil || !strings.Contains(got.LastRun.Message, tc.want) {
				t.Fatalf("task %s, last run %+v; want %s with a message saying %q", got.State, got.LastRun, tc.state, tc.want)
			}
			if len(got.LastRun.Message) > taskservice.MaxMessage {
				t.Fatalf("message of %d bytes kept, the limit is %d", len(got.LastRun.Message), taskservice.MaxMessage)
			}
			if tc.state == client.StateDead && string(got.Spec.Data) != "kept" {
				t.Fatalf("a refused outcome changed the task's data to %d bytes", len(got.Spec.Data))
			}
		})
	}
}

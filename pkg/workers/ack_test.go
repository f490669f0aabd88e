package workers_test

import (
	"context"
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
	etcd := tst.StartEtcd(t)
	n := startNode(t, etcd.Client(t), "n1", 5*time.Second, nil,
		func(s *nodeSetup) { s.remote = func(p *workers.Pool) taskservice.Remote { return lateRemote{p} } })
	c := dialClient(t, n.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
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

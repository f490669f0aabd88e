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
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// A worker's outcome that asks for what cannot be stored (issue 20): 3 MiB
// of new data, a snooze to the year 146138514283, a message of 100 KiB.
// Before the limits, the data and the snooze were committed as given: the
// commit failed (etcd refuses a request over 1.5 MiB) or stored an instant
// no arithmetic survives, and the task stayed RUNNING. Now the run fails
// saying what was too large, the task keeps its data, and a long message
// is cut with a marker.
func TestWorkerOutcomeLimits(t *testing.T) {
	etcd := tst.StartEtcd(t)
	n := startNode(t, etcd.Client(t), "n1", 5*time.Second, nil)
	c := dialClient(t, n.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
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

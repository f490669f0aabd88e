package taskservice_test

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// smallRequests is the request limit of the etcd the too-large tests run
// on: the API's own limits (--max-payload, the encoded task limit) keep a
// commit within etcd's default 1.5 MiB, so the write path's guard is
// reached against an etcd that takes less (an external etcd configured
// lower, or a record stored by an older release before the API limits).
const smallRequests = 256 << 10

// smallRequestNode is a harness on an etcd refusing requests over
// smallRequests, whose node knows that limit and takes payload and data up
// to 400 KiB: data the API accepts, in writes etcd refuses.
func smallRequestNode(t *testing.T) *harness {
	return newHarnessOn(t, tst.StartEtcdLimited(t, smallRequests), func(c *taskservice.Config) {
		c.MaxPayload, c.MaxRequestBytes = 400<<10, smallRequests
	})
}

// A run whose outcome is too large to store (300 KiB of handler data,
// within --max-payload, against an etcd that takes 256 KiB a request) is
// committed as a failed run whose message says what was too large, its
// data dropped; it counts an attempt and is retried by the task's policy,
// here to DEAD after two attempts. Until this release the commit was
// retried forever and the task stayed RUNNING.
func TestOutcomeTooLargeIsAFailedRun(t *testing.T) {
	h := smallRequestNode(t)
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		r.SetData(make([]byte, 300<<10))
		return nil
	}
	s := spec("big-outcome", "rec", now())
	s.Data, s.MaxAttempts = []byte("seed"), 2
	s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(10 * time.Millisecond)}
	task := h.schedule(s)
	got := h.waitState("big-outcome", task.Id, taskdv1.TaskState_TASK_STATE_DEAD)
	if string(got.Spec.Data) != "seed" {
		t.Errorf("stored data is %d bytes, want the seed kept", len(got.Spec.Data))
	}
	runs := h.runs("big-outcome", task.Id)
	if len(runs) != 2 {
		t.Fatalf("%d runs in history, want 2 attempts", len(runs))
	}
	for _, r := range runs {
		if r.Outcome != taskdv1.Outcome_OUTCOME_ERROR || !contains(r.Message, "outcome too large to store (data 307200 bytes (300.0 KiB)") ||
			!contains(r.Message, "limit is") {
			t.Errorf("run %d: %s %q, want ERROR saying the data was too large and the limit", r.RunNumber, r.Outcome, r.Message)
		}
	}
	if calls := h.rec.of(task.Id); len(calls) != 2 || calls[1].Data != "seed" {
		t.Errorf("calls %+v: want two, the retry seeing the seed data", calls)
	}
}

// The case of the field: a task whose record is already large (200 KiB of
// payload; a 1.5 MB cron expression accepted by an old release is the
// same) and a run with a 60 KiB message: the record and history entry
// together do not fit one request. The run is recorded as a failed run
// without the long message, and the retry, whose outcome fits, completes
// the task.
func TestLongMessageOnALargeRecordIsAFailedRun(t *testing.T) {
	h := smallRequestNode(t)
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		if n == 1 {
			r.SetMessage(strings.Repeat("m", 60<<10))
		}
		return nil
	}
	s := spec("big-record", "rec", now())
	s.Payload, s.MaxAttempts = make([]byte, 200<<10), 3
	s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(10 * time.Millisecond)}
	task := h.schedule(s)
	h.waitState("big-record", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	runs := h.runs("big-record", task.Id)
	if len(runs) != 2 {
		t.Fatalf("%d runs in history, want the failed one and its retry", len(runs))
	}
	if r := runs[1]; r.Outcome != taskdv1.Outcome_OUTCOME_ERROR || !contains(r.Message, "message 61440 bytes (60.0 KiB)") ||
		!contains(r.Message, "it was OUTCOME_SUCCESS") {
		t.Errorf("first run: %s %q, want ERROR saying the 60 KiB message was too large", r.Outcome, r.Message)
	}
	if r := runs[0]; r.Outcome != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Errorf("retry: %s %q, want SUCCESS", r.Outcome, r.Message)
	}
}

// A batch of handoff entries whose read is too large to receive as a whole
// (one identity with 1.2 MB of tasks, against a client that receives at
// most 1 MiB) is split: the neighbours' handoff proceeds, and the large
// identity is read alone, in pages that fit. Until this release the whole
// batch failed, and was read again and failed again, forever.
func TestLargeIdentityDoesNotBlockItsNeighboursHandoff(t *testing.T) {
	c := newCluster(t, []string{"a"}, func(cfg *taskservice.Config) { cfg.MaxPayload = 1 << 20 })
	neighbours := []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"}
	for _, id := range neighbours {
		c.schedule("a", spec(id, "rec", after(time.Hour)))
	}
	for range 4 {
		s := spec("large", "rec", after(time.Hour))
		s.Payload = make([]byte, 300<<10)
		c.schedule("a", s)
	}
	// b receives at most 1 MiB in one answer.
	bCli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.etcd.URL}, DialTimeout: 5 * time.Second,
		MaxCallRecvMsgSize: 1 << 20, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bCli.Close() })
	ev := &events{}
	cfg := fastConfig("b", c.rec, ev)
	cfg.MaxPayload = 1 << 20
	c.nodes["b"], c.ev["b"] = tst.StartNode(t, bCli, cfg), ev
	// a stops: the placement leader (b) moves every identity of a to b in
	// one Txn, whose handoff entries b takes in one batch.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.nodes["a"].Stop(ctx); err != nil {
		t.Fatalf("stop a: %v", err)
	}
	for _, id := range append(neighbours, "large") {
		tst.Eventually(t, 20*time.Second, func() bool { return ev.hasIdentity(taskservice.EventHandedOff, id) },
			"b to take %s over", id)
	}
	if st := c.nodes["b"].Stats(); st.Scheduled < len(neighbours)+4 {
		t.Errorf("b holds %d scheduled tasks, want %d", st.Scheduled, len(neighbours)+4)
	}
}

// A schedule batch of long-named identities whose tasks do not fit one etcd
// request together is stored in parts that fit (sized as etcd sizes them:
// the compares and keys of 40 identities escaped to 765 bytes each count),
// and one task too large to store even alone fails the request with
// INVALID_ARGUMENT naming it and saying what was too large.
func TestScheduleSplitsWhatDoesNotFitAndNamesATaskTooLarge(t *testing.T) {
	h := newHarness(t, func(c *taskservice.Config) { c.MaxPayload = 2 << 20 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var specs []*taskdv1.TaskSpec
	for i := range 40 {
		s := spec(strings.Repeat("漢", 84)+string(rune('a'+i%26))+string(rune('a'+i/26)), "rec", after(time.Hour))
		s.Payload = make([]byte, 40<<10)
		specs = append(specs, s)
	}
	resp, err := h.node.Client.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: specs}, grpcMaxMsg())
	if err != nil {
		t.Fatalf("schedule 40 tasks of 40 KiB: %v", err)
	}
	for i, task := range resp.Tasks {
		if got := h.get(specs[i].Identity, task.Id); len(got.Spec.Payload) != 40<<10 {
			t.Fatalf("task %d stored with %d bytes of payload", i, len(got.Spec.Payload))
		}
	}
	big := spec("too-large", "rec", after(time.Hour))
	big.Payload = make([]byte, 1600<<10)
	_, err = h.node.Client.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: []*taskdv1.TaskSpec{spec("fine", "rec", after(time.Hour)), big}}, grpcMaxMsg())
	if status.Code(err) != codes.InvalidArgument || !contains(err.Error(), "tasks[1]") || !contains(err.Error(), "limit is") {
		t.Fatalf("schedule a task of 1.6 MB: %v, want INVALID_ARGUMENT naming tasks[1] and the limit", err)
	}
}

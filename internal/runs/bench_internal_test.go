package runs

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/record"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func benchRecord() *storev1.TaskRecord {
	now := time.Now()
	rec := &storev1.TaskRecord{
		Id: "01m8n00fnm1tq0b5anbv2qw959",
		Spec: &taskdv1.TaskSpec{Identity: "alice", Kind: "noop", Scope: taskdv1.Scope_SCOPE_IDENTITY,
			Payload:  make([]byte, 64),
			Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: timestamppb.New(now)}}}}},
		State: taskdv1.TaskState_TASK_STATE_SCHEDULED, CreatedAt: timestamppb.New(now),
	}
	record.InitTriggers(rec, nil)
	return rec
}

// BenchmarkRunStateMachine measures the record work of one run on the node:
// plan the start, fold the outcome, encode both writes.
func BenchmarkRunStateMachine(b *testing.B) {
	rec := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now()
		p := record.PlanStart(rec, "n1", "inc", 7, record.Timing{Now: now, Threshold: time.Minute, MaxCatchUp: 100})
		done := record.Clone(p.Rec)
		hist, _ := applyResult(done, p.Marker, runResult{Result: record.Result{Outcome: taskdv1.Outcome_OUTCOME_SUCCESS, Started: now, Ended: now}}, "n1", 0.5)
		if _, err := encodeBoth(p.Rec, done, hist); err != nil {
			b.Fatal(err)
		}
	}
}

func encodeBoth(a, c *storev1.TaskRecord, run *taskdv1.Run) (int, error) {
	var n int
	for _, r := range []*storev1.TaskRecord{a, c} {
		bb, err := proto.Marshal(r)
		if err != nil {
			return 0, err
		}
		n += len(bb)
	}
	bb, err := proto.Marshal(&storev1.RunRecord{Run: run})
	return n + len(bb), err
}

package record

import (
	"testing"
	"time"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// everyShared is a shared EVERY_NODE record of two periodic triggers, as
// scheduled (spec version 1, both triggers set at version 1).
func everyShared() *storev1.TaskRecord {
	rec := newRecord(func(s *taskdv1.TaskSpec) { s.Scope = taskdv1.Scope_SCOPE_EVERY_NODE },
		rEvery(rt0, time.Minute, 0), rEvery(rt0, time.Hour, 0))
	rec.SpecVersion, rec.TriggerVersions = 1, []int64{1, 1}
	return rec
}

// TestEveryProgressRoundTrip: a node's progress split out of its merged
// view comes back unchanged when merged again, and a run-now request is
// pending only until the node has served its revision.
func TestEveryProgressRoundTrip(t *testing.T) {
	shared := everyShared()
	shared.ManualRequested = true
	view := MergeEvery(shared, 10, nil, rt0, nil)
	if view.RunCount != 0 || view.Running != nil || len(view.Triggers) != 2 {
		t.Fatalf("first view: run count %d, running %v, %d triggers", view.RunCount, view.Running, len(view.Triggers))
	}
	if !view.ManualRequested {
		t.Fatal("a run-now request no node has served is not pending in the first view")
	}
	p := mustStart(t, view, rt0.Add(time.Second))
	rec, _, _ := finish(p, ended(taskdv1.Outcome_OUTCOME_SUCCESS, rt0.Add(2*time.Second)))

	prog := SplitEvery(rec, 10)
	again := MergeEvery(shared, 10, prog, rt0.Add(3*time.Second), nil)
	if again.RunCount != rec.RunCount || again.RunCount != 1 {
		t.Errorf("run count after the round trip = %d, want %d (1)", again.RunCount, rec.RunCount)
	}
	if again.GetLastRun().GetRunNumber() != rec.GetLastRun().GetRunNumber() {
		t.Errorf("last run %d, want %d", again.GetLastRun().GetRunNumber(), rec.GetLastRun().GetRunNumber())
	}
	for i := range rec.Triggers {
		if !tsEq(again.Triggers[i].GetNext(), rec.Triggers[i].GetNext().AsTime()) {
			t.Errorf("trigger %d next = %s, want %s", i, fmtTS(again.Triggers[i].GetNext()), fmtTS(rec.Triggers[i].GetNext()))
		}
	}
	if again.ManualRequested {
		t.Error("the run-now request this node served (revision 10) is pending again")
	}
	if later := MergeEvery(shared, 11, prog, rt0.Add(3*time.Second), nil); !later.ManualRequested {
		t.Error("a run-now request at a revision after the one served is not pending")
	}
	if shared.RunCount != 0 || shared.Running != nil {
		t.Error("MergeEvery changed the shared record")
	}
}

// TestEveryProgressAfterUpdate: after an update that changed one trigger,
// that trigger starts afresh and the other keeps its progress.
func TestEveryProgressAfterUpdate(t *testing.T) {
	shared := everyShared()
	view := MergeEvery(shared, 10, nil, rt0, nil)
	p := mustStart(t, view, rt0.Add(time.Second))
	rec, _, _ := finish(p, ended(taskdv1.Outcome_OUTCOME_SUCCESS, rt0.Add(2*time.Second)))
	prog := SplitEvery(rec, 0)

	updated := everyShared()
	updated.Spec.Triggers[1] = rEvery(rt0.Add(30*time.Minute), time.Hour, 0)
	updated.SpecVersion, updated.TriggerVersions = 2, []int64{1, 2}
	got := MergeEvery(updated, 12, prog, rt0.Add(3*time.Second), nil)

	if !tsEq(got.Triggers[0].GetNext(), rec.Triggers[0].GetNext().AsTime()) {
		t.Errorf("unchanged trigger next = %s, want its progress %s", fmtTS(got.Triggers[0].GetNext()), fmtTS(rec.Triggers[0].GetNext()))
	}
	if want := rt0.Add(30 * time.Minute); !tsEq(got.Triggers[1].GetNext(), want) {
		t.Errorf("changed trigger next = %s, want it afresh at %s", fmtTS(got.Triggers[1].GetNext()), want)
	}
	if got.RunCount != 1 {
		t.Errorf("run count = %d after an update, want 1 (kept)", got.RunCount)
	}
}

package record

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestSettleStates: the state of a record with no run in flight.
func TestSettleStates(t *testing.T) {
	now := rt0.Add(time.Hour)
	earlier := rt0.Add(time.Minute)
	// fired is a once task whose one fire time has fired, its last run
	// ending with outcome (no last run for OUTCOME_UNSPECIFIED).
	fired := func(outcome taskdv1.Outcome) func() *storev1.TaskRecord {
		return func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0))
			r.Triggers[0].Next, r.Triggers[0].Fired = nil, 1
			if outcome != taskdv1.Outcome_OUTCOME_UNSPECIFIED {
				r.LastRun = &taskdv1.RunSummary{RunNumber: 1, Outcome: outcome}
			}
			return r
		}
	}
	for _, tc := range []struct {
		name       string
		rec        func() *storev1.TaskRecord
		want       taskdv1.TaskState
		wantFinish time.Time
	}{
		{name: "next fire time", rec: func() *storev1.TaskRecord { return newRecord(nil, rOnce(now.Add(time.Hour))) },
			want: stScheduled},
		{name: "no fire time left", rec: fired(taskdv1.Outcome_OUTCOME_UNSPECIFIED), want: stCompleted, wantFinish: now},
		{name: "retry pending", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0))
			r.Triggers[0].Next, r.RetryAt = nil, timestamppb.New(now)
			return r
		}, want: stRetrying},
		{name: "recovery pending", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0))
			r.Triggers[0].Next, r.RecoveryPending = nil, &storev1.RunMarker{RunNumber: 1, FireTime: timestamppb.New(rt0)}
			return r
		}, want: stScheduled},
		{name: "manual run requested", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0))
			r.Triggers[0].Next, r.ManualRequested = nil, true
			return r
		}, want: stScheduled},
		{name: "cancelled keeps its finish time", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(now.Add(time.Hour)))
			r.State, r.FinishedAt = stCanceled, timestamppb.New(earlier)
			return r
		}, want: stCanceled, wantFinish: earlier},
		{name: "dead without a finish time gets one", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0))
			r.State = stDead
			return r
		}, want: stDead, wantFinish: now},
		{name: "no fire time left after a failed run: DEAD", rec: fired(taskdv1.Outcome_OUTCOME_ERROR), want: stDead, wantFinish: now},
		{name: "no fire time left after an interrupted run: DEAD", rec: fired(taskdv1.Outcome_OUTCOME_INTERRUPTED), want: stDead, wantFinish: now},
		{name: "no fire time left after a warning: COMPLETED", rec: fired(taskdv1.Outcome_OUTCOME_WARNING), want: stCompleted, wantFinish: now},
		{name: "completed keeps its finish time", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0))
			r.State, r.FinishedAt, r.Triggers[0].Next = stCompleted, timestamppb.New(earlier), nil
			return r
		}, want: stCompleted, wantFinish: earlier},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec()
			Settle(rec, now)
			if rec.State != tc.want || !tsEq(rec.FinishedAt, tc.wantFinish) {
				t.Fatalf("state %s finished_at %s, want %s, %s", rec.State, fmtTS(rec.FinishedAt), tc.want, tc.wantFinish)
			}
		})
	}
}

// TestDueTime: when a record next needs its node.
func TestDueTime(t *testing.T) {
	now := rt0
	const retention = 24 * time.Hour
	for _, tc := range []struct {
		name      string
		rec       func() *storev1.TaskRecord
		wantAt    time.Time
		wantPurge bool
		wantOK    bool
	}{
		{name: "next fire time", rec: func() *storev1.TaskRecord { return newRecord(nil, rOnce(rt0.Add(time.Hour))) },
			wantAt: rt0.Add(time.Hour), wantOK: true},
		{name: "earliest of two triggers", rec: func() *storev1.TaskRecord {
			return newRecord(nil, rOnce(rt0.Add(time.Hour)), rEvery(rt0.Add(time.Minute), time.Hour, 0))
		}, wantAt: rt0.Add(time.Minute), wantOK: true},
		{name: "retry before the trigger", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rEvery(rt0.Add(time.Hour), time.Hour, 0))
			r.RetryAt = timestamppb.New(rt0.Add(2 * time.Hour)) // a retry of an earlier fire time comes first
			return r
		}, wantAt: rt0.Add(2 * time.Hour), wantOK: true},
		{name: "recovery before the retry", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0.Add(time.Hour)))
			r.RetryAt = timestamppb.New(rt0.Add(2 * time.Hour))
			r.RecoveryPending = &storev1.RunMarker{RunNumber: 1, FireTime: timestamppb.New(rt0.Add(-time.Minute))}
			return r
		}, wantAt: rt0.Add(-time.Minute), wantOK: true},
		{name: "manual run requested: now", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0.Add(time.Hour)))
			r.ManualRequested = true
			return r
		}, wantAt: now, wantOK: true},
		{name: "completed: purge after retention", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0))
			r.State, r.FinishedAt, r.Triggers[0].Next = stCompleted, timestamppb.New(rt0), nil
			return r
		}, wantAt: rt0.Add(retention), wantPurge: true, wantOK: true},
		{name: "cancelled with a manual run requested: purge only", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0.Add(time.Hour)))
			r.State, r.FinishedAt, r.ManualRequested = stCanceled, timestamppb.New(rt0), true
			return r
		}, wantAt: rt0.Add(retention), wantPurge: true, wantOK: true},
		{name: "dead: never", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0.Add(time.Hour)))
			r.State, r.FinishedAt = stDead, timestamppb.New(rt0)
			return r
		}},
		{name: "no fire time left: never", rec: func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0))
			r.Triggers[0].Next = nil
			return r
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, purge, ok := Due(tc.rec(), retention, Timing{Now: now})
			if ok != tc.wantOK || purge != tc.wantPurge || (ok && !at.Equal(tc.wantAt)) {
				t.Fatalf("Due = %s, purge %v, ok %v; want %s, %v, %v", at, purge, ok, tc.wantAt, tc.wantPurge, tc.wantOK)
			}
		})
	}
}

// TestGlanceAgreesWithDueTime: for every record pending.GlanceAt accepts,
// its due time is the one Due computes from the decoded record, and
// the record is one a cold entry may stand for (no run marker, no manual
// run, no task pause, no overlap); the records it must refuse are refused.
// A node queues a glanced record cold on that due time (thaw.go), so a
// wrong answer here would run a task late or never.
func TestGlanceAgreesWithDueTime(t *testing.T) {
	cron := &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 3 * * ?", TimeZone: "Europe/Berlin"}}}
	startup := &taskdv1.Trigger{Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}}
	for _, tc := range []struct {
		name   string
		rec    func() *storev1.TaskRecord
		wantOK bool
	}{
		{"once", func() *storev1.TaskRecord { return newRecord(nil, rOnce(rt0.Add(time.Hour))) }, true},
		{"earliest of three, negative priority", func() *storev1.TaskRecord {
			return newRecord(func(s *taskdv1.TaskSpec) { s.Priority = -7; s.Kind = "mail" },
				rOnce(rt0.Add(time.Hour)), rEvery(rt0.Add(time.Minute), time.Hour, 0), cron)
		}, true},
		{"one trigger spent, one left", func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0), rEvery(rt0.Add(time.Minute), time.Hour, 0))
			r.Triggers[0].Next = nil
			return r
		}, true},
		{"before 1970", func() *storev1.TaskRecord {
			return newRecord(nil, rOnce(time.Date(1969, 7, 20, 20, 17, 40, 5, time.UTC)))
		}, true},
		{"retry pending", func() *storev1.TaskRecord {
			r := newRecord(nil, rEvery(rt0.Add(time.Hour), time.Hour, 0))
			r.State, r.RetryAt = stRetrying, timestamppb.New(rt0.Add(2*time.Hour))
			return r
		}, false},
		{"recovery pending", func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0.Add(time.Hour)))
			r.RecoveryPending = &storev1.RunMarker{RunNumber: 1, FireTime: timestamppb.New(rt0.Add(-time.Minute))}
			return r
		}, false},
		{"run marker", func() *storev1.TaskRecord {
			r := newRecord(nil, rEvery(rt0.Add(time.Hour), time.Hour, 0))
			r.State, r.Running = stRunning, &storev1.RunMarker{RunNumber: 3, Node: "n1"}
			return r
		}, false},
		{"manual run asked", func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0.Add(time.Hour)))
			r.ManualRequested = true
			return r
		}, false},
		{"paused", func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0.Add(time.Hour)))
			r.PausedAt = timestamppb.New(rt0)
			return r
		}, false},
		{"overlap allowed", func() *storev1.TaskRecord {
			return newRecord(func(s *taskdv1.TaskSpec) { s.AllowOverlap = true }, rEvery(rt0.Add(time.Hour), time.Hour, 0))
		}, false},
		{"on-start-up trigger", func() *storev1.TaskRecord { return newRecord(nil, rOnce(rt0.Add(time.Hour)), startup) }, false},
		{"completed", func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0))
			r.State, r.FinishedAt, r.Triggers[0].Next = stCompleted, timestamppb.New(rt0), nil
			return r
		}, false},
		{"dead", func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0.Add(time.Hour)))
			r.State, r.FinishedAt = stDead, timestamppb.New(rt0)
			return r
		}, false},
		{"no fire time left", func() *storev1.TaskRecord {
			r := newRecord(nil, rOnce(rt0))
			r.Triggers[0].Next = nil
			return r
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec()
			b, err := pending.Encode(rec)
			if err != nil {
				t.Fatal(err)
			}
			g, ok := pending.GlanceAt(b)
			if ok != tc.wantOK {
				t.Fatalf("GlanceAt ok = %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			at, purge, due := Due(rec, time.Hour, Timing{Now: rt0, DispatchStart: rt0})
			if !due || purge || !at.Equal(g.Due) {
				t.Fatalf("glanced due %s; Due says %s (purge %v, ok %v)", g.Due, at, purge, due)
			}
			if g.ID != rec.Id || g.Priority != rec.Spec.Priority || string(g.Kind) != rec.Spec.Kind {
				t.Fatalf("glanced id %q priority %d kind %q; the record has %q, %d, %q", g.ID, g.Priority, g.Kind, rec.Id, rec.Spec.Priority, rec.Spec.Kind)
			}
		})
	}
}

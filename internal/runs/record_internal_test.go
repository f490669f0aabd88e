package runs

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// These tests drive the record state machine (internal/record, whose own
// tests cover it) through what the node adds to it: a handler's result as
// classify reads it, a stale marker as staleResult judges it, a result
// forwarded to a new owner, and the events its outcomes are told as. Fixed
// times: no clock, no etcd.

// rt0 is the fixed "now" the tables are built around.
var rt0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	rThreshold  = 10 * time.Second // misfire threshold
	rMaxCatchUp = 10
	rNode       = "n1"
	rInc        = "inc-1"
	rEpoch      = int64(42)
)

const (
	stScheduled = taskdv1.TaskState_TASK_STATE_SCHEDULED
	stRunning   = taskdv1.TaskState_TASK_STATE_RUNNING
	stRetrying  = taskdv1.TaskState_TASK_STATE_RETRYING
	stCompleted = taskdv1.TaskState_TASK_STATE_COMPLETED
	stDead      = taskdv1.TaskState_TASK_STATE_DEAD
)

func rOnce(at time.Time) *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: timestamppb.New(at)}}}
}

// newRecord is a freshly accepted task with spec's triggers.
func newRecord(mod func(*taskdv1.TaskSpec), trig ...*taskdv1.Trigger) *storev1.TaskRecord {
	s := &taskdv1.TaskSpec{Identity: "id", Kind: "k", Triggers: trig, Data: []byte("seed"),
		Backoff: &taskdv1.Backoff{Initial: durationpb.New(time.Second), Max: durationpb.New(10 * time.Second)}}
	if mod != nil {
		mod(s)
	}
	rec := &storev1.TaskRecord{Id: "T1", Spec: s, State: stScheduled, CreatedAt: timestamppb.New(rt0.Add(-time.Hour))}
	record.InitTriggers(rec, nil)
	return rec
}

// mustStart plans a start at now and fails unless it runs.
func mustStart(t *testing.T, rec *storev1.TaskRecord, now time.Time) startPlan {
	t.Helper()
	p := startPlan{Start: record.PlanStart(rec, rNode, rInc, rEpoch, record.Timing{Now: now, Threshold: rThreshold, MaxCatchUp: rMaxCatchUp})}
	if !p.Runs || p.Marker == nil || p.Rec.Running != p.Marker || p.Rec.State != stRunning {
		t.Fatalf("PlanStart at %s: run %v marker %v state %s: want a started run", now, p.Runs, p.Marker, p.Rec.GetState())
	}
	return p
}

// finish applies res to the started plan's record (as commit does) and
// returns the resulting record, history entry and event.
func finish(p startPlan, res runResult) (*storev1.TaskRecord, *taskdv1.Run, EventType) {
	rec := record.Clone(p.Rec)
	run, ev := applyResult(rec, p.Marker, res, rNode, 0.5)
	return rec, run, ev
}

// ended is a result of the given outcome, ended at end.
func ended(outcome taskdv1.Outcome, end time.Time) runResult {
	return runResult{Result: record.Result{Outcome: outcome, Started: end.Add(-100 * time.Millisecond), Ended: end},
		fence: Fence{Epoch: rEpoch, Revision: 7}}
}

func tsEq(a *timestamppb.Timestamp, b time.Time) bool {
	if a == nil {
		return b.IsZero()
	}
	return !b.IsZero() && a.AsTime().Equal(b)
}

func fmtTS(a *timestamppb.Timestamp) string {
	if a == nil {
		return "<nil>"
	}
	return a.AsTime().Format(time.RFC3339Nano)
}

// TestSnoozeRunsSameFireTimeWithoutAnAttempt: after a snooze the same fire
// time runs again (a new run number, the same attempt); a zero snooze time
// (Snooze(time.Time{})) means at once, never "done".
func TestSnoozeRunsSameFireTimeWithoutAnAttempt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		until  time.Time
		wantAt func(end time.Time) time.Time
	}{
		{name: "future", until: rt0.Add(time.Hour), wantAt: func(time.Time) time.Time { return rt0.Add(time.Hour) }},
		{name: "zero", wantAt: func(end time.Time) time.Time { return end }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecord(func(s *taskdv1.TaskSpec) { s.MaxAttempts = 2 }, rOnce(rt0))
			// A first attempt fails, so the snoozed one is attempt 2 of 2:
			// a snooze that used an attempt would make the next one DEAD.
			p := mustStart(t, rec, rt0)
			res := ended(taskdv1.Outcome_OUTCOME_ERROR, rt0.Add(time.Second))
			res.Retry = true
			rec, _, _ = finish(p, res)
			p = mustStart(t, rec, rec.RetryAt.AsTime())
			if p.Attempt != 2 {
				t.Fatalf("attempt %d, want 2", p.Attempt)
			}
			// The handler snoozes: the answer taskservice.Snooze makes
			// (a zero time is the moment it was called: TestAnswerOf), then
			// the same classification the node does.
			until := tc.until
			if until.IsZero() {
				until = time.Now()
			}
			var sr runResult
			classify(&sr, Answer{Err: errors.New("snoozed"), Ask: AskSnooze, Until: until, Text: "snoozed"}, nil)
			if sr.Snooze.IsZero() || sr.Retry {
				t.Fatalf("Snooze(%v) classified as snooze=%v retry=%v", tc.until, sr.Snooze, sr.Retry)
			}
			end := p.Marker.StartedAt.AsTime().Add(time.Second)
			if tc.until.IsZero() {
				// Snooze read the clock for "at once"; our fixed times are
				// fictional, so place the commit after that reading.
				end = sr.Snooze.Add(time.Second)
			}
			sr.Started, sr.Ended, sr.fence = end.Add(-time.Second), end, Fence{Epoch: rEpoch, Revision: 9}
			rec, run, ev := finish(p, sr)
			want := tc.wantAt(end)
			if rec.State != stRetrying || ev != EventRetryScheduled || !tsEq(rec.RetryAt, want) || rec.Attempt != 1 {
				t.Fatalf("after the snooze: state %s event %s retry_at %s attempt %d, want RETRYING at %s with attempt 1 used",
					rec.State, ev, fmtTS(rec.RetryAt), rec.Attempt, want)
			}
			if run.Outcome != taskdv1.Outcome_OUTCOME_WARNING || run.Message == "" {
				t.Errorf("history %v: want a WARNING saying it snoozed", run)
			}
			if at, _, _ := record.Due(rec, 0, record.Timing{Now: end}); !at.Equal(want) {
				t.Errorf("due at %s, want %s", at, want)
			}
			again := mustStart(t, rec, want)
			if again.Attempt != 2 || !again.Fire.Equal(rt0) || again.RunNumber != p.RunNumber+1 {
				t.Fatalf("after the snooze: attempt %d fire %s run %d, want attempt 2 of fire %s, run %d",
					again.Attempt, again.Fire, again.RunNumber, rt0, p.RunNumber+1)
			}
			// It fails once more: attempt 2 of 2, DEAD. Had the snooze used
			// an attempt, attempt 3 would have come first.
			res = ended(taskdv1.Outcome_OUTCOME_ERROR, want.Add(time.Second))
			res.Retry = true
			if rec, _, _ = finish(again, res); rec.State != stDead {
				t.Fatalf("state %s, want DEAD after attempt 2 of 2", rec.State)
			}
		})
	}
}

// TestSnoozeZeroIsNotDone: Snooze(time.Time{}) once made the node treat the
// fire time as done (a once task COMPLETED without having run its work).
func TestSnoozeZeroIsNotDone(t *testing.T) {
	// Snooze(zero) asks for the moment it was called (TestAnswerOf in
	// pkg/taskservice); any past time is committed as the commit's own.
	p := mustStart(t, newRecord(nil, rOnce(rt0)), rt0)
	res := ended(taskdv1.Outcome_OUTCOME_WARNING, rt0.Add(time.Second))
	res.Snooze = rt0.Add(-time.Minute) // any past time
	rec, _, _ := finish(p, res)
	if rec.State == stCompleted || !tsEq(rec.RetryAt, res.Ended) {
		t.Fatalf("past snooze: state %s retry_at %s, want RETRYING at the commit %s", rec.State, fmtTS(rec.RetryAt), res.Ended)
	}
}

// TestHandlerDataIsStored: data set by the handler replaces the task's
// data, whatever the outcome; data not set is kept.
func TestHandlerDataIsStored(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome taskdv1.Outcome
		retry   bool
		set     bool
		want    string
	}{
		{"success, set", taskdv1.Outcome_OUTCOME_SUCCESS, false, true, "new"},
		{"error, set", taskdv1.Outcome_OUTCOME_ERROR, true, true, "new"},
		{"interrupted, set", taskdv1.Outcome_OUTCOME_INTERRUPTED, false, true, "new"},
		{"success, not set", taskdv1.Outcome_OUTCOME_SUCCESS, false, false, "seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustStart(t, newRecord(nil, rOnce(rt0)), rt0)
			res := ended(tc.outcome, rt0.Add(time.Second))
			res.Retry = tc.retry
			if tc.set {
				// What a handler's SetData leaves (answerOf: TestAnswerOf).
				classify(&res, Answer{Data: []byte("new"), DataSet: true}, nil)
				res.Outcome, res.Retry = tc.outcome, tc.retry
			}
			rec, _, _ := finish(p, res)
			if string(rec.Spec.Data) != tc.want {
				t.Fatalf("data %q, want %q", rec.Spec.Data, tc.want)
			}
		})
	}
}

// TestResolveStale: a marker left by a run that will not report is
// recorded (no fence: the run's revision is unknown) as staleResult says,
// and with recovery its fire time runs again with the same run number. A
// start whose handler was never called is recorded DROPPED and always runs
// again: nothing ran.
func TestResolveStale(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name         string
		recovery     *bool
		self         string // the resolving node's incarnation
		alive        bool   // the marker's node is still registered
		wantOutcome  taskdv1.Outcome
		wantMsg      string
		wantRecovery bool
		wantState    taskdv1.TaskState
	}{
		{name: "node gone, recovery by default", self: "inc-2", wantOutcome: taskdv1.Outcome_OUTCOME_INTERRUPTED,
			wantMsg: rInc, wantRecovery: true, wantState: stScheduled},
		{name: "node alive but silent", self: "inc-2", alive: true, wantOutcome: taskdv1.Outcome_OUTCOME_INTERRUPTED,
			wantMsg: "did not report", wantRecovery: true, wantState: stScheduled},
		{name: "node gone, no recovery: DEAD", recovery: &no, self: "inc-2", wantOutcome: taskdv1.Outcome_OUTCOME_INTERRUPTED,
			wantMsg: rInc, wantState: stDead},
		{name: "own start never called, no recovery asked: runs again anyway", recovery: &no, self: rInc, alive: true,
			wantOutcome: taskdv1.Outcome_OUTCOME_DROPPED, wantMsg: "not called", wantRecovery: true, wantState: stScheduled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecord(func(s *taskdv1.TaskSpec) { s.RequestsRecovery = tc.recovery }, rOnce(rt0))
			p := mustStart(t, rec, rt0)
			stale := record.Clone(p.Rec) // as read back by whoever resolves it
			now := rt0.Add(time.Minute)
			run := resolveStale(stale, staleResult(stale.Running, tc.self, tc.alive, 30*time.Second, now))
			if run.Outcome != tc.wantOutcome || run.Fence != "" || run.RunNumber != 1 || !tsEq(run.EndedAt, now) ||
				!tsEq(run.StartedAt, rt0) || run.Node != rNode || !strings.Contains(run.Message, tc.wantMsg) {
				t.Errorf("history %v: want run 1 %s on %s, no fence, started at the marker's start, ended now, message with %q",
					run, tc.wantOutcome, rNode, tc.wantMsg)
			}
			if stale.Running != nil || stale.State != tc.wantState || stale.LastRun.GetOutcome() != tc.wantOutcome {
				t.Errorf("record running %v state %s last %v, want no marker, %s", stale.Running, stale.State, stale.LastRun, tc.wantState)
			}
			if (stale.RecoveryPending != nil) != tc.wantRecovery {
				t.Fatalf("recovery_pending %v, want %v", stale.RecoveryPending, tc.wantRecovery)
			}
			if tc.wantRecovery {
				r := mustStart(t, stale, now)
				if !r.Recovery || r.RunNumber != 1 || !r.Fire.Equal(rt0) || r.Rec.RunCount != 1 {
					t.Errorf("re-run: recovery %v run %d fire %s run_count %d, want run 1 of %s again",
						r.Recovery, r.RunNumber, r.Fire, r.Rec.RunCount, rt0)
				}
			}
		})
	}
}

// TestForwardedResultKeepsWhatTheHandlerAsked: a result forwarded to the
// identity's new owner (markers.go) carries every request of the handler,
// the earliest retry of RetryAt included, through its encoding.
func TestForwardedResultKeepsWhatTheHandlerAsked(t *testing.T) {
	m := &storev1.RunMarker{RunNumber: 4}
	for _, res := range []runResult{
		func() runResult {
			r := ended(taskdv1.Outcome_OUTCOME_ERROR, rt0)
			r.Retry, r.RetryAt, r.Message = true, rt0.Add(time.Hour), "busy"
			return r
		}(),
		func() runResult {
			r := ended(taskdv1.Outcome_OUTCOME_WARNING, rt0)
			r.Snooze, r.Data, r.DataSet = rt0.Add(time.Minute), []byte("d"), true
			return r
		}(),
		func() runResult {
			r := ended(taskdv1.Outcome_OUTCOME_CANCELED, rt0)
			r.Cancel, r.Recovery = true, true
			return r
		}(),
	} {
		b, err := proto.Marshal(forwardedOf(m, rNode, rInc, res))
		if err != nil {
			t.Fatal(err)
		}
		var fr storev1.ForwardedResult
		if err := proto.Unmarshal(b, &fr); err != nil {
			t.Fatal(err)
		}
		got := resultOfForwarded(&fr)
		if got.Outcome != res.Outcome || got.Message != res.Message || got.Retry != res.Retry || !got.RetryAt.Equal(res.RetryAt) ||
			!got.Snooze.Equal(res.Snooze) || got.Cancel != res.Cancel || got.Recovery != res.Recovery ||
			string(got.Data) != string(res.Data) || got.DataSet != res.DataSet || got.fence != res.fence ||
			!got.Started.Equal(res.Started) || !got.Ended.Equal(res.Ended) {
			t.Errorf("forwarded %+v\nread back as %+v", res, got)
		}
	}
}

func TestInstantRoundTrip(t *testing.T) {
	if held.InstantOf(time.Time{}) != 0 || !held.Instant(0).Time().IsZero() {
		t.Fatal("the zero time is not the zero instant")
	}
	at := time.Date(2026, 3, 29, 1, 30, 0, 123456789, time.UTC)
	if got := held.InstantOf(at).Time(); !got.Equal(at) {
		t.Fatalf("instant of %v is %v", at, got)
	}
}

// TestEventOfNext: what a record waits for after a run is told as the
// event of contract §8 that says so.
func TestEventOfNext(t *testing.T) {
	for next, want := range map[record.Next]EventType{
		record.NextScheduled:  EventNextScheduled,
		record.RetryScheduled: EventRetryScheduled,
		record.Finalized:      EventFinalized,
	} {
		if got := eventOfNext(next); got != want {
			t.Errorf("eventOfNext(%s) = %s, want %s", next, got, want)
		}
	}
}

// TestForRecordCarriesEveryField: every field of record.Result is filled
// from a run's result, its fence rendered as the history shows it, so
// that nothing a handler asked for is lost on its way into the state
// machine.
func TestForRecordCarriesEveryField(t *testing.T) {
	res := runResult{Result: record.Result{Outcome: taskdv1.Outcome_OUTCOME_ERROR, Message: "m", Retry: true,
		RetryAt: rt0.Add(time.Hour), Snooze: rt0.Add(time.Minute), Cancel: true, Again: true, Data: []byte("d"),
		DataSet: true, Started: rt0, Ended: rt0.Add(time.Second), Recovery: true, NotCalled: true},
		fence: Fence{Epoch: rEpoch, Revision: 7}}
	got := res.forRecord()
	v := reflect.ValueOf(got)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("record.Result.%s is not filled from runResult", v.Type().Field(i).Name)
		}
	}
	want := record.Result{Outcome: res.Outcome, Message: res.Message, Retry: true, RetryAt: res.RetryAt, Snooze: res.Snooze,
		Cancel: true, Again: true, Data: res.Data, DataSet: true, Started: res.Started, Ended: res.Ended,
		Fence: "42.7", Recovery: true, NotCalled: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("forRecord = %+v\nwant %+v", got, want)
	}
}

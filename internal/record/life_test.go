package record

import (
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/specdefaults"
	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file simulates the lives of random tasks on a fake clock, as a
// node drives them: when a record is due the clock moves to its due time
// (and, at random, late past it), PlanStart plans the start, something may
// change the record while the run is in flight (a cancel, a run-now), and
// ApplyResult folds in a random result. The property tests check each step
// of these lives. Every life comes from a fixed seed, so a failure names
// the seed and step that reproduce it.

// lives is how many random task lives each property test walks through;
// lifeSteps bounds the steps of one (a periodic task never ends by itself).
const (
	lives     = 2000
	lifeSteps = 30
	retention = time.Hour
)

// step is one start of a simulated life and, if it ran, its end.
type step struct {
	seed   uint64
	index  int
	input  *storev1.TaskRecord // the record PlanStart was given
	before *storev1.TaskRecord // a copy of it taken before PlanStart
	tm     Timing
	due    time.Time // Due(before), which has come by tm.Now
	plan   Start
	// lastRun is the highest run number handed out before this step.
	lastRun int64

	// When plan.Runs:
	meanwhile string              // "", "cancel" or "run-now": a change while the run was in flight
	started   *storev1.TaskRecord // plan.Rec with that change, as ApplyResult was given it
	res       Result
	after     *storev1.TaskRecord
	run       *taskdv1.Run
	next      Next
}

// settled is the record the step leaves, with no run in flight.
func (s step) settled() *storev1.TaskRecord {
	if s.plan.Runs {
		return s.after
	}
	return s.plan.Rec
}

// window is a calendar that excludes the instants of [from, to).
type window struct{ from, to time.Time }

func (w window) Excludes(t time.Time) bool { return !t.Before(w.from) && t.Before(w.to) }

func (w window) NextIncluded(t time.Time) (time.Time, bool) {
	if w.Excludes(t) {
		return w.to, true
	}
	return t, true
}

// live walks the random life of seed, calling visit at each step until it
// returns false or the task has nothing left to do.
func live(seed uint64, visit func(step) bool) {
	r := rand.New(rand.NewPCG(seed, 0x7a5cd))
	t0 := rt0
	now := t0.Add(-time.Duration(r.IntN(3600)) * time.Second)
	var dispatchStart time.Time
	if r.IntN(2) == 0 {
		dispatchStart = now.Add(-time.Duration(r.IntN(7200)) * time.Second)
	}
	var initCals, cals schedule.Exclusions
	if r.IntN(4) == 0 {
		from := t0.Add(time.Duration(r.IntN(7200)-3600) * time.Second)
		cals = window{from, from.Add(time.Duration(1+r.IntN(1800)) * time.Second)}
		if r.IntN(2) == 0 {
			initCals = cals // else: a calendar created after the task
		}
	}
	rec := &storev1.TaskRecord{Id: "T1", Spec: randomSpec(r, t0), State: stScheduled, CreatedAt: timestamppb.New(t0.Add(-2 * time.Hour))}
	InitTriggers(rec, initCals)
	Settle(rec, now)
	var lastRun int64
	for i := range lifeSteps {
		if r.IntN(10) == 0 {
			rec.ManualRequested = true // RunTaskNow, of a task in any state
		}
		due, purge, ok := Due(rec, retention, Timing{Now: now, DispatchStart: dispatchStart})
		if !ok || purge {
			if r.IntN(2) == 0 || rec.State == stCanceled {
				return
			}
			rec.ManualRequested = true // a run-now of an ended task
			due = now
		}
		if due.After(now) {
			now = due
		}
		now = now.Add(lateness(r))
		tm := Timing{Now: now, DispatchStart: dispatchStart, Threshold: rThreshold, MaxCatchUp: 1 + r.IntN(5), Calendars: cals}
		if r.IntN(3) == 0 {
			tm.TakenAt = now.Add(-time.Duration(r.IntN(7200)) * time.Second) // a take-over: catch-up
		}
		s := step{seed: seed, index: i, input: rec, before: Clone(rec), tm: tm, due: due, lastRun: lastRun}
		s.plan = PlanStart(rec, rNode, rInc, rEpoch, tm)
		if s.plan.Runs {
			s.started = Clone(s.plan.Rec)
			switch r.IntN(12) {
			case 0:
				s.meanwhile = "cancel"
				s.started.State, s.started.FinishedAt = stCanceled, timestamppb.New(now)
			case 1:
				s.meanwhile = "run-now"
				s.started.ManualRequested = true
			}
			s.res = randomResult(r, now)
			s.after = Clone(s.started)
			s.run, s.next = ApplyResult(s.after, s.plan.Marker, s.res, rNode, r.Float64())
			lastRun = max(lastRun, s.plan.RunNumber)
			now = s.res.Ended
		}
		if !visit(s) {
			return
		}
		rec = s.settled()
	}
}

// lateness is how late past its due time a start comes: on time, within
// the misfire threshold, past it, or hours late (a node was down).
func lateness(r *rand.Rand) time.Duration {
	switch r.IntN(5) {
	case 0, 1:
		return 0
	case 2:
		return time.Duration(r.Int64N(int64(rThreshold)))
	case 3:
		return rThreshold + time.Duration(r.Int64N(int64(10*time.Minute)))
	}
	return time.Duration(1+r.IntN(6)) * time.Hour
}

func randomSpec(r *rand.Rand, t0 time.Time) *taskdv1.TaskSpec {
	at := func() *timestamppb.Timestamp {
		return timestamppb.New(t0.Add(time.Duration(r.IntN(7200)-3600) * time.Second))
	}
	policies := []taskdv1.MisfirePolicy{taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED, taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP,
		taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW, taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL}
	s := &taskdv1.TaskSpec{Identity: "id", Kind: "k", Data: []byte("seed"), Misfire: policies[r.IntN(len(policies))],
		MaxAttempts: int32(r.IntN(5))}
	if r.IntN(5) == 0 {
		s.Scope = taskdv1.Scope_SCOPE_EVERY_NODE
	}
	if r.IntN(4) != 0 {
		s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(time.Duration(r.IntN(4)) * time.Second),
			Max: durationpb.New(time.Duration(r.IntN(40)) * time.Second)}
	}
	switch r.IntN(3) {
	case 0:
		yes := true
		s.RequestsRecovery = &yes
	case 1:
		no := false
		s.RequestsRecovery = &no
	}
	n := 1 + r.IntN(3)
	if r.IntN(3) == 0 {
		// The one trigger of most tasks: once.
		s.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: at()}}}}
		return s
	}
	for range n {
		var t *taskdv1.Trigger
		switch r.IntN(7) {
		case 0, 1, 2:
			t = &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: at()}}}
		case 3, 4:
			t = &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
				Start: at(), Interval: durationpb.New(time.Duration(10+r.IntN(600)) * time.Second), Count: int64(r.IntN(6))}}}
		case 5:
			t = &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 */5 * * * ?", TimeZone: "UTC", Start: at()}}}
		default:
			t = &taskdv1.Trigger{Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}}
		}
		if r.IntN(4) == 0 {
			t.Misfire = policies[r.IntN(len(policies))]
		}
		s.Triggers = append(s.Triggers, t)
	}
	return s
}

// randomResult is the result of a run started at now: any of what a
// handler can ask for (contract §5.2), or an interrupted run.
func randomResult(r *rand.Rand, now time.Time) Result {
	end := now.Add(time.Duration(r.IntN(5000)) * time.Millisecond)
	res := Result{Started: now, Ended: end, Fence: rFence}
	switch r.IntN(10) {
	case 0, 1:
		res.Outcome = taskdv1.Outcome_OUTCOME_SUCCESS
		res.Again = r.IntN(8) == 0
	case 2:
		res.Outcome = taskdv1.Outcome_OUTCOME_WARNING
	case 3, 4, 5:
		res.Outcome, res.Retry = taskdv1.Outcome_OUTCOME_ERROR, true
		if r.IntN(2) == 0 {
			res.RetryAt = end.Add(time.Duration(r.IntN(150)-30) * time.Second) // the handler's earliest retry
		}
	case 6:
		res.Outcome = taskdv1.Outcome_OUTCOME_ERROR // not retried
	case 7:
		res.Outcome, res.NotCalled = taskdv1.Outcome_OUTCOME_INTERRUPTED, r.IntN(5) == 0
	case 8:
		res.Outcome, res.Cancel = taskdv1.Outcome_OUTCOME_CANCELED, true
	default:
		res.Outcome, res.Snooze = taskdv1.Outcome_OUTCOME_WARNING, end.Add(time.Duration(r.IntN(120)-60)*time.Second)
	}
	if r.IntN(10) == 0 {
		res.Data, res.DataSet = []byte("new"), true
	}
	return res
}

// attemptsOf is the attempts a fire time of spec gets (contract §5.2:
// max_attempts, 25 by default).
func attemptsOf(spec *taskdv1.TaskSpec) int32 {
	if spec.GetMaxAttempts() > 0 {
		return spec.GetMaxAttempts()
	}
	return specdefaults.MaxAttempts
}

// longestBackoffOf is the longest wait before a retry of spec: its
// backoff's max (10m by default), and never less than its initial wait (1s
// by default).
func longestBackoffOf(spec *taskdv1.TaskSpec) time.Duration {
	initial, longest := spec.GetBackoff().GetInitial().AsDuration(), spec.GetBackoff().GetMax().AsDuration()
	if initial <= 0 {
		initial = specdefaults.BackoffInitial
	}
	if longest <= 0 {
		longest = specdefaults.BackoffMax
	}
	return max(initial, longest)
}

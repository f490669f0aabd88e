package schedule

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The tables of these tests name fire times by number (k-th fire time of a
// trigger), which reads better than instants; this file translates between
// numbers and the package's time-based progress.

// fireAt returns fire time k (0-based) of trig, walking First and Next.
func fireAt(trig *taskdv1.Trigger, k int64) (time.Time, bool) {
	if k < 0 {
		return time.Time{}, false
	}
	if p := trig.GetPeriodic(); p != nil {
		if p.GetStart() == nil || p.GetInterval() == nil || p.GetInterval().AsDuration() <= 0 {
			return time.Time{}, false
		}
		return periodicAt(p, k) // closed form: k may be huge
	}
	at, ok := First(trig, nil)
	for i := int64(0); ok && i < k; i++ {
		at, ok = Next(trig, at, nil)
	}
	return at, ok
}

// indexOf returns how many fire times of trig come before at.
func indexOf(trig *taskdv1.Trigger, at time.Time) int64 {
	if p := trig.GetPeriodic(); p != nil {
		return periodicIndex(p, at.Add(-time.Nanosecond))
	}
	n := int64(0)
	for f, ok := First(trig, nil); ok && f.Before(at); f, ok = Next(trig, f, nil) {
		n++
	}
	return n
}

// endOfTime is the latest instant time.Time holds.
var endOfTime = time.Unix(math.MaxInt64-62135596800, 999_999_999)

// total returns how many fire times trig has (it must have finitely many).
func total(trig *taskdv1.Trigger) int64 {
	if p := trig.GetPeriodic(); p != nil {
		return periodicIndex(p, endOfTime)
	}
	return indexOf(trig, endOfTime)
}

// idxPlan is Plan with progress as a fire time number.
type idxPlan struct {
	Run      bool
	Fire     time.Time
	Fired    int64
	Misfired int64
	Late     bool
}

// planCase is a case of a table of plans: trig at progress fired, planned
// at now with policy and maxCatchUp, wants want.
type planCase struct {
	name       string
	trig       *taskdv1.Trigger
	fired      int64
	now        time.Time
	policy     taskdv1.MisfirePolicy
	maxCatchUp int
	want       idxPlan
}

// dueIdx is Due for fire time number fired.
func dueIdx(trig *taskdv1.Trigger, fired int64, now time.Time, threshold time.Duration,
	policy taskdv1.MisfirePolicy, maxCatchUp int) idxPlan {
	return planIdx(Due, trig, fired, now, threshold, policy, maxCatchUp)
}

// planIdx is plan (Due or CatchUp) for fire time number fired.
func planIdx(plan func(*taskdv1.Trigger, time.Time, time.Time, time.Duration, taskdv1.MisfirePolicy, int, Exclusions) Plan,
	trig *taskdv1.Trigger, fired int64, now time.Time, threshold time.Duration, policy taskdv1.MisfirePolicy, maxCatchUp int) idxPlan {
	due, ok := fireAt(trig, fired)
	if !ok {
		return idxPlan{Fired: fired}
	}
	p := plan(trig, due, now, threshold, policy, maxCatchUp, nil)
	out := idxPlan{Run: p.Run, Fire: p.Fire, Misfired: p.Misfired, Late: p.Late}
	if p.NextOK {
		out.Fired = indexOf(trig, p.Next)
	} else {
		out.Fired = total(trig)
	}
	return out
}

// randPeriodic is a periodic trigger from base, its interval iv 1 to
// units units; a third of them have a count of 1 to counts, and (ends not
// 0) a third end within ends intervals of base.
func randPeriodic(r *rand.Rand, unit time.Duration, units, counts, ends int) (trig *taskdv1.Trigger, iv time.Duration) {
	iv = time.Duration(1+r.IntN(units)) * unit
	pp := per{start: ts(base), interval: durationpb.New(iv)}
	if r.IntN(3) == 0 {
		pp.count = int64(1 + r.IntN(counts))
	}
	if ends != 0 && r.IntN(3) == 0 {
		pp.end = ts(base.Add(time.Duration(r.Int64N(int64(ends) * int64(iv)))))
	}
	return periodic(pp), iv
}

// simulate plays a node on a simulated clock from now until until: it
// waits for the trigger's next fire time (moving the clock to it) and
// plans fire time number fired (due at fire) with plan, as often as plan
// asks. It returns the simulated instants of the runs, the fire times run,
// the misfires counted and the progress it ends at.
func simulate(t *testing.T, trig *taskdv1.Trigger, fired int64, now, until time.Time,
	plan func(fire time.Time, fired int64, now time.Time) idxPlan) (startedAt, fires []time.Time, misfired, progress int64) {
	t.Helper()
	for steps := 0; ; steps++ {
		if steps > 1_000_000 {
			t.Fatal("the simulated node does not terminate")
		}
		fire, ok := fireAt(trig, fired)
		if !ok {
			break
		}
		if fire.After(now) {
			if fire.After(until) {
				break
			}
			now = fire // the timer fires exactly on time
		}
		p := plan(fire, fired, now)
		if p.Run {
			startedAt = append(startedAt, now)
			fires = append(fires, p.Fire)
		}
		misfired += p.Misfired
		fired = p.Fired
	}
	return startedAt, fires, misfired, fired
}

package schedule

import (
	"math"
	"time"

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

// dueIdx is Due for fire time number fired.
func dueIdx(trig *taskdv1.Trigger, fired int64, now time.Time, threshold time.Duration,
	policy taskdv1.MisfirePolicy, maxCatchUp int) idxPlan {
	due, ok := fireAt(trig, fired)
	if !ok {
		return idxPlan{Fired: fired}
	}
	p := Due(trig, due, now, threshold, policy, maxCatchUp, nil)
	out := idxPlan{Run: p.Run, Fire: p.Fire, Misfired: p.Misfired, Late: p.Late}
	if p.NextOK {
		out.Fired = indexOf(trig, p.Next)
	} else {
		out.Fired = total(trig)
	}
	return out
}

package schedule

import (
	"time"

	"github.com/taskd/taskd/internal/specdefaults"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// DefaultPolicy is the misfire policy of a trigger kind (contract §4.4):
// FIRE_ONCE_NOW for once and on-start-up triggers, SKIP for recurring ones
// (periodic and cron: periods missed during downtime are not caught up).
func DefaultPolicy(t *taskdv1.Trigger) taskdv1.MisfirePolicy { return specdefaults.Misfire(t) }

// Policy is the misfire policy trigger t follows: its own, else the task's
// (taskPolicy), else its kind's default. A value this version does not know
// counts as unspecified.
func Policy(t *taskdv1.Trigger, taskPolicy taskdv1.MisfirePolicy) taskdv1.MisfirePolicy {
	for _, p := range []taskdv1.MisfirePolicy{t.GetMisfire(), taskPolicy} {
		switch p {
		case taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP,
			taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
			taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL:
			return p
		}
	}
	return DefaultPolicy(t)
}

// maxMissedCount bounds the walk that counts the fire times a misfire
// passes over when there is no closed form (cron, calendars): beyond it the
// count reported is this number.
const maxMissedCount = 100_000

// Plan is what to do with a trigger's due fire time.
type Plan struct {
	// Run is true when Fire is to be run now.
	Run  bool
	Fire time.Time
	// Next is the trigger's next fire time once the plan is carried out;
	// NextOK is false when it has none left.
	Next   time.Time
	NextOK bool
	// Misfired counts fire times resolved by the misfire policy without a
	// run of their own (at most maxMissedCount).
	Misfired int64
	// Late is true when the fire time misfired: it was more than the
	// threshold late, or (CatchUp) one of several that a take-over found
	// past.
	Late bool
}

// Due plans trigger t's fire time due (its progress), which has come: due
// is at or before now, on a node that held the task when due came (see
// CatchUp for one that took it since). A fire time that starts within
// threshold of it runs as usual; later than that it has misfired and the
// trigger's policy (see Policy; taskPolicy is the task's) decides:
// SKIP goes on with the first fire time after now, FIRE_ONCE_NOW runs the
// first missed one and goes on after now, FIRE_ALL runs the missed ones one
// by one, the oldest dropped beyond maxCatchUp (at least 1).
func Due(t *taskdv1.Trigger, due, now time.Time, threshold time.Duration,
	taskPolicy taskdv1.MisfirePolicy, maxCatchUp int, cals Exclusions) Plan {
	if now.Sub(due) <= threshold {
		next, ok := Next(t, due, cals)
		return Plan{Run: true, Fire: due, Next: next, NextOK: ok}
	}
	return misfire(t, due, now, taskPolicy, maxCatchUp, cals)
}

// CatchUp plans trigger t's fire time due, which has come, on a node that
// took the task after due passed: it loaded it at its start, adopted it
// from an owner that died, received it in a move, or found it resumed from
// a pause. The fire times from due to now passed while no node could run
// them, and the threshold, which judges how late a running node starts a
// fire time, does not replay them:
//
//   - one fire time past (due, the next one is after now) is lateness, as
//     for Due: it runs if it is at most threshold late, else misfires;
//   - several past: they follow the policy whatever the threshold says.
//     SKIP runs none of them and goes on with the first fire time after
//     now; FIRE_ONCE_NOW runs one, the first missed (due), for all of them
//     and goes on after now; FIRE_ALL runs them one by one, the newest
//     maxCatchUp (at least 1) of them, the older dropped.
//
// So SKIP and FIRE_ONCE_NOW never run more than one fire time of those a
// take-over finds past, and only FIRE_ALL replays them.
func CatchUp(t *taskdv1.Trigger, due, now time.Time, threshold time.Duration,
	taskPolicy taskdv1.MisfirePolicy, maxCatchUp int, cals Exclusions) Plan {
	if second, ok := Next(t, due, cals); !ok || second.After(now) {
		return Due(t, due, now, threshold, taskPolicy, maxCatchUp, cals)
	}
	return misfire(t, due, now, taskPolicy, maxCatchUp, cals)
}

// misfire is the plan of the policy for the fire times of t from due to
// now, which have misfired.
func misfire(t *taskdv1.Trigger, due, now time.Time, taskPolicy taskdv1.MisfirePolicy, maxCatchUp int, cals Exclusions) Plan {
	afterNow, afterNowOK := Next(t, now, cals)
	missed := countBetween(t, due, now, cals) // fire times in [due, now]
	switch Policy(t, taskPolicy) {
	case taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP:
		return Plan{Next: afterNow, NextOK: afterNowOK, Misfired: missed, Late: true}
	case taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL:
		keep := int64(max(maxCatchUp, 1))
		fire := due
		dropped := int64(0)
		if missed > keep {
			fire = newest(t, due, now, int(keep), cals)
			dropped = missed - keep
		}
		next, ok := Next(t, fire, cals)
		return Plan{Run: true, Fire: fire, Next: next, NextOK: ok, Misfired: dropped, Late: true}
	default: // FIRE_ONCE_NOW
		return Plan{Run: true, Fire: due, Next: afterNow, NextOK: afterNowOK, Misfired: max(missed-1, 0), Late: true}
	}
}

// countBetween counts t's fire times in [from, to] (from is one of them).
func countBetween(t *taskdv1.Trigger, from, to time.Time, cals Exclusions) int64 {
	if p := t.GetPeriodic(); p != nil && cals == nil {
		return max(periodicIndex(p, to)-periodicIndex(p, from.Add(-time.Nanosecond)), 1)
	}
	n := int64(1)
	for at, ok := Next(t, from, cals); ok && !at.After(to) && n < maxMissedCount; at, ok = Next(t, at, cals) {
		n++
	}
	return n
}

// newest returns the oldest of the keep newest fire times of t in
// [from, to] (which holds more than keep). It looks back from to over
// doubling windows, so its cost follows keep, not the length of [from, to].
func newest(t *taskdv1.Trigger, from, to time.Time, keep int, cals Exclusions) time.Time {
	if p := t.GetPeriodic(); p != nil && cals == nil {
		at, _ := periodicAt(p, periodicIndex(p, to)-int64(keep))
		return at
	}
	ring := make([]time.Time, keep)
	for w := time.Second; ; w *= 2 {
		start := to.Add(-w)
		if !start.After(from) || w >= 1<<61 {
			start = from.Add(-time.Nanosecond)
		}
		n := 0
		for at, ok := Next(t, start, cals); ok && !at.After(to); at, ok = Next(t, at, cals) {
			ring[n%keep] = at
			n++
		}
		if n >= keep || !start.After(from) {
			if n < keep {
				return from
			}
			return ring[n%keep] // the oldest of the last keep
		}
	}
}

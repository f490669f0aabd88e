package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// base is the fixed time every test counts from: no test reads the clock.
var base = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

const threshold = 60 * time.Second // contract §4.4 default --misfire-threshold

const (
	unspecified = taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED
	onceNow     = taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW
	skip        = taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP
	fireAll     = taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL
)

func at(d time.Duration) time.Time { return base.Add(d) }

func ts(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }

func once(a *timestamppb.Timestamp) *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: a}}}
}

type per struct {
	start    *timestamppb.Timestamp
	interval *durationpb.Duration
	end      *timestamppb.Timestamp
	count    int64
}

func periodic(p per) *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
		Start: p.start, Interval: p.interval, End: p.end, Count: p.count,
	}}}
}

// every is a periodic trigger from base with interval iv, unbounded.
func every(iv time.Duration) *taskdv1.Trigger {
	return periodic(per{start: ts(base), interval: durationpb.New(iv)})
}

func TestFireAt(t *testing.T) {
	tenS := durationpb.New(10 * time.Second)
	tests := []struct {
		name   string
		trig   *taskdv1.Trigger
		k      int64
		want   time.Time
		wantOK bool
	}{
		{"nil trigger", nil, 0, time.Time{}, false},
		{"trigger without kind", &taskdv1.Trigger{}, 0, time.Time{}, false},

		{"once at set k=0", once(ts(at(time.Hour))), 0, at(time.Hour), true},
		{"once at set k=1", once(ts(at(time.Hour))), 1, time.Time{}, false},
		{"once at set k=2", once(ts(at(time.Hour))), 2, time.Time{}, false},
		{"once at set k<0", once(ts(at(time.Hour))), -1, time.Time{}, false},
		{"once at unset", once(nil), 0, time.Time{}, false},
		{"once nil body", &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{}}, 0, time.Time{}, false},
		{"once at before epoch", once(ts(time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC))), 0,
			time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), true},

		{"periodic k=0 is start", periodic(per{start: ts(base), interval: tenS}), 0, base, true},
		{"periodic k=1", periodic(per{start: ts(base), interval: tenS}), 1, at(10 * time.Second), true},
		{"periodic k=3", periodic(per{start: ts(base), interval: tenS}), 3, at(30 * time.Second), true},
		{"periodic k large", periodic(per{start: ts(base), interval: tenS}), 1_000_000,
			at(10_000_000 * time.Second), true},
		{"periodic k<0", periodic(per{start: ts(base), interval: tenS}), -1, time.Time{}, false},
		{"periodic k=MinInt64", periodic(per{start: ts(base), interval: tenS}), math.MinInt64, time.Time{}, false},
		{"periodic sub-second interval", periodic(per{start: ts(base), interval: durationpb.New(time.Millisecond)}), 1500,
			at(1500 * time.Millisecond), true},
		{"periodic start unset", periodic(per{interval: tenS}), 0, time.Time{}, false},
		{"periodic interval unset", periodic(per{start: ts(base)}), 0, time.Time{}, false},
		{"periodic interval zero", periodic(per{start: ts(base), interval: durationpb.New(0)}), 0, time.Time{}, false},
		{"periodic interval negative", periodic(per{start: ts(base), interval: durationpb.New(-time.Second)}), 0, time.Time{}, false},
		{"periodic nil body", &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{}}, 0, time.Time{}, false},

		{"count: last one", periodic(per{start: ts(base), interval: tenS, count: 3}), 2, at(20 * time.Second), true},
		{"count: one past", periodic(per{start: ts(base), interval: tenS, count: 3}), 3, time.Time{}, false},
		{"count 1: k=0", periodic(per{start: ts(base), interval: tenS, count: 1}), 0, base, true},
		{"count 1: k=1", periodic(per{start: ts(base), interval: tenS, count: 1}), 1, time.Time{}, false},
		{"count 0 is unlimited", periodic(per{start: ts(base), interval: tenS, count: 0}), 99, at(990 * time.Second), true},
		{"negative count is unlimited", periodic(per{start: ts(base), interval: tenS, count: -1}), 99, at(990 * time.Second), true},

		{"end inclusive: fire == end", periodic(per{start: ts(base), interval: tenS, end: ts(at(30 * time.Second))}), 3,
			at(30 * time.Second), true},
		{"end inclusive: one past end", periodic(per{start: ts(base), interval: tenS, end: ts(at(30 * time.Second))}), 4,
			time.Time{}, false},
		{"end 1ns after fire", periodic(per{start: ts(base), interval: tenS, end: ts(at(30*time.Second + 1))}), 3,
			at(30 * time.Second), true},
		{"end 1ns before fire", periodic(per{start: ts(base), interval: tenS, end: ts(at(30*time.Second - 1))}), 3,
			time.Time{}, false},
		{"end == start: k=0", periodic(per{start: ts(base), interval: tenS, end: ts(base)}), 0, base, true},
		{"end == start: k=1", periodic(per{start: ts(base), interval: tenS, end: ts(base)}), 1, time.Time{}, false},
		{"end before start", periodic(per{start: ts(base), interval: tenS, end: ts(at(-time.Second))}), 0, time.Time{}, false},
		{"count tighter than end", periodic(per{start: ts(base), interval: tenS, end: ts(at(time.Hour)), count: 2}), 2,
			time.Time{}, false},
		{"end tighter than count", periodic(per{start: ts(base), interval: tenS, end: ts(at(20 * time.Second)), count: 10}), 3,
			time.Time{}, false},
		{"end tighter than count: last", periodic(per{start: ts(base), interval: tenS, end: ts(at(20 * time.Second)), count: 10}), 2,
			at(20 * time.Second), true},

		// k*interval beyond time.Duration's range must not wrap around to a
		// time before start.
		{"overflow", periodic(per{start: ts(base), interval: durationpb.New(time.Hour)}), math.MaxInt64, time.Time{}, false},
		{"overflow just past", periodic(per{start: ts(base), interval: durationpb.New(time.Second)}),
			math.MaxInt64/int64(time.Second) + 1, time.Time{}, false},
		{"largest representable", periodic(per{start: ts(base), interval: durationpb.New(time.Second)}),
			math.MaxInt64 / int64(time.Second), base.Add(time.Duration(math.MaxInt64/int64(time.Second)) * time.Second), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := fireAt(tt.trig, tt.k)
			if ok != tt.wantOK || !got.Equal(tt.want) {
				t.Fatalf("fireAt(k=%d) = %v, %v; want %v, %v", tt.k, got, ok, tt.want, tt.wantOK)
			}
			if ok && got.Before(base.AddDate(-200, 0, 0)) && tt.name != "once at before epoch" {
				t.Fatalf("fireAt(k=%d) = %v: wrapped around", tt.k, got)
			}
		})
	}
}

// TestFireAtMonotonic: a periodic trigger's fire times are strictly
// increasing and exactly one interval apart (fixed rate, no drift).
func TestFireAtMonotonic(t *testing.T) {
	for _, iv := range []time.Duration{time.Millisecond, 7 * time.Millisecond, time.Second, 90 * time.Minute} {
		trig := every(iv)
		prev, _ := fireAt(trig, 0)
		for k := int64(1); k < 2000; k++ {
			got, ok := fireAt(trig, k)
			if !ok {
				t.Fatalf("iv %v: fireAt(%d) not ok", iv, k)
			}
			if got.Sub(prev) != iv {
				t.Fatalf("iv %v: fireAt(%d)-fireAt(%d) = %v", iv, k, k-1, got.Sub(prev))
			}
			prev = got
		}
	}
}

func TestDefaultPolicy(t *testing.T) {
	tests := []struct {
		name string
		trig *taskdv1.Trigger
		want taskdv1.MisfirePolicy
	}{
		{"once", once(ts(base)), onceNow},
		{"once without at", once(nil), onceNow},
		{"periodic", every(time.Second), skip},
		{"periodic bounded", periodic(per{start: ts(base), interval: durationpb.New(time.Second), count: 3}), skip},
		{"nil", nil, onceNow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DefaultPolicy(tt.trig); got != tt.want {
				t.Fatalf("DefaultPolicy = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDue(t *testing.T) {
	const s = time.Second
	p10 := every(10 * s)
	count5 := periodic(per{start: ts(base), interval: durationpb.New(10 * s), count: 5})
	end40 := periodic(per{start: ts(base), interval: durationpb.New(10 * s), end: ts(at(40 * s))})
	end1h := periodic(per{start: ts(base), interval: durationpb.New(10 * s), end: ts(at(time.Hour))})
	onceAtBase := once(ts(base))

	tests := []planCase{
		// On time: within the threshold runs and advances by exactly one,
		// whatever the policy, even when later fire times have also passed.
		{"on time exactly", p10, 0, base, skip, 100, idxPlan{Run: true, Fire: base, Fired: 1}},
		{"on time, later k", p10, 7, at(70 * s), skip, 100, idxPlan{Run: true, Fire: at(70 * s), Fired: 8}},
		{"early (before fire)", p10, 0, at(-s), skip, 100, idxPlan{Run: true, Fire: base, Fired: 1}},
		{"late by 1ms", p10, 0, at(time.Millisecond), skip, 100, idxPlan{Run: true, Fire: base, Fired: 1}},
		{"late by exactly threshold", p10, 0, at(threshold), skip, 100, idxPlan{Run: true, Fire: base, Fired: 1}},
		{"late by threshold, FIRE_ALL", p10, 0, at(threshold), fireAll, 100, idxPlan{Run: true, Fire: base, Fired: 1}},
		{"late by threshold, FIRE_ONCE_NOW", p10, 0, at(threshold), onceNow, 100, idxPlan{Run: true, Fire: base, Fired: 1}},
		{"once on time", onceAtBase, 0, at(5 * s), unspecified, 100, idxPlan{Run: true, Fire: base, Fired: 1}},

		// SKIP: on to the first fire time after now; every passed one is
		// counted as misfired and none runs.
		{"SKIP 1ns past threshold", p10, 0, at(threshold + 1), skip, 100,
			idxPlan{Fired: 7, Misfired: 7, Late: true}}, // k=0..6 (0s..60s) passed, next k=7 at 70s
		{"SKIP now between fire times", p10, 0, at(95 * s), skip, 100,
			idxPlan{Fired: 10, Misfired: 10, Late: true}},
		{"SKIP now exactly on a fire time", p10, 0, at(100 * s), skip, 100,
			idxPlan{Fired: 11, Misfired: 11, Late: true}}, // "after now": k=10 at 100s is passed
		{"SKIP from mid progress", p10, 3, at(95 * s), skip, 100,
			idxPlan{Fired: 10, Misfired: 7, Late: true}},
		{"SKIP ignores maxCatchUp", p10, 0, at(95 * s), skip, 1,
			idxPlan{Fired: 10, Misfired: 10, Late: true}},
		{"SKIP once", onceAtBase, 0, at(time.Hour), skip, 100,
			idxPlan{Fired: 1, Misfired: 1, Late: true}},
		{"SKIP end not reached", end1h, 0, at(95 * s), skip, 100,
			idxPlan{Fired: 10, Misfired: 10, Late: true}},

		// FIRE_ONCE_NOW: one run (of the first missed time) for all of them,
		// then on past now.
		{"FIRE_ONCE_NOW periodic", p10, 0, at(95 * s), onceNow, 100,
			idxPlan{Run: true, Fire: base, Fired: 10, Misfired: 9, Late: true}},
		{"FIRE_ONCE_NOW from mid progress", p10, 3, at(95 * s), onceNow, 100,
			idxPlan{Run: true, Fire: at(30 * s), Fired: 10, Misfired: 6, Late: true}},
		{"FIRE_ONCE_NOW on a fire time", p10, 0, at(100 * s), onceNow, 100,
			idxPlan{Run: true, Fire: base, Fired: 11, Misfired: 10, Late: true}},
		{"FIRE_ONCE_NOW once", onceAtBase, 0, at(time.Hour), onceNow, 100,
			idxPlan{Run: true, Fire: base, Fired: 1, Misfired: 0, Late: true}},

		// FIRE_ALL: one run per missed time, oldest first; beyond maxCatchUp
		// the oldest are dropped.
		{"FIRE_ALL within cap", p10, 0, at(95 * s), fireAll, 100,
			idxPlan{Run: true, Fire: base, Fired: 1, Late: true}},
		{"FIRE_ALL exactly cap", p10, 0, at(95 * s), fireAll, 10,
			idxPlan{Run: true, Fire: base, Fired: 1, Late: true}},
		{"FIRE_ALL one over cap", p10, 0, at(95 * s), fireAll, 9,
			idxPlan{Run: true, Fire: at(10 * s), Fired: 2, Misfired: 1, Late: true}},
		{"FIRE_ALL cap 3 of 10", p10, 0, at(95 * s), fireAll, 3,
			idxPlan{Run: true, Fire: at(70 * s), Fired: 8, Misfired: 7, Late: true}},
		{"FIRE_ALL cap 0 means 1", p10, 0, at(95 * s), fireAll, 0,
			idxPlan{Run: true, Fire: at(90 * s), Fired: 10, Misfired: 9, Late: true}},
		{"FIRE_ALL cap negative means 1", p10, 0, at(95 * s), fireAll, -5,
			idxPlan{Run: true, Fire: at(90 * s), Fired: 10, Misfired: 9, Late: true}},
		{"FIRE_ALL once", onceAtBase, 0, at(time.Hour), fireAll, 100,
			idxPlan{Run: true, Fire: base, Fired: 1, Late: true}},

		// UNSPECIFIED takes the kind's default (contract §4.4); so does a value
		// this version does not know.
		{"UNSPECIFIED periodic is SKIP", p10, 0, at(95 * s), unspecified, 100,
			idxPlan{Fired: 10, Misfired: 10, Late: true}},
		{"UNSPECIFIED once is FIRE_ONCE_NOW", onceAtBase, 0, at(time.Hour), unspecified, 100,
			idxPlan{Run: true, Fire: base, Fired: 1, Late: true}},
		{"unknown policy periodic is SKIP", p10, 0, at(95 * s), taskdv1.MisfirePolicy(99), 100,
			idxPlan{Fired: 10, Misfired: 10, Late: true}},
		{"unknown policy once is FIRE_ONCE_NOW", onceAtBase, 0, at(time.Hour), taskdv1.MisfirePolicy(99), 100,
			idxPlan{Run: true, Fire: base, Fired: 1, Late: true}},

		// Count or end exhausted during the catch-up: progress stops at the
		// trigger's last fire time and only existing ones are counted.
		{"count exhausted, SKIP", count5, 2, at(time.Hour), skip, 100,
			idxPlan{Fired: 5, Misfired: 3, Late: true}},
		{"count exhausted, FIRE_ONCE_NOW", count5, 2, at(time.Hour), onceNow, 100,
			idxPlan{Run: true, Fire: at(20 * s), Fired: 5, Misfired: 2, Late: true}},
		{"count exhausted, FIRE_ALL within cap", count5, 2, at(time.Hour), fireAll, 100,
			idxPlan{Run: true, Fire: at(20 * s), Fired: 3, Late: true}},
		{"count exhausted, FIRE_ALL cap 1", count5, 2, at(time.Hour), fireAll, 1,
			idxPlan{Run: true, Fire: at(40 * s), Fired: 5, Misfired: 2, Late: true}},
		{"count exhausted, last one", count5, 4, at(time.Hour), skip, 100,
			idxPlan{Fired: 5, Misfired: 1, Late: true}},
		{"end exhausted (inclusive), SKIP", end40, 1, at(time.Hour), skip, 100,
			idxPlan{Fired: 5, Misfired: 4, Late: true}}, // k=1..4; k=4 is at end (40s)
		{"end exhausted, FIRE_ONCE_NOW", end40, 1, at(time.Hour), onceNow, 100,
			idxPlan{Run: true, Fire: at(10 * s), Fired: 5, Misfired: 3, Late: true}},
		{"end exhausted, FIRE_ALL cap 2", end40, 0, at(time.Hour), fireAll, 2,
			idxPlan{Run: true, Fire: at(30 * s), Fired: 4, Misfired: 3, Late: true}},

		// Nothing left: the plan is empty and progress unchanged.
		{"count done", count5, 5, at(time.Hour), skip, 100, idxPlan{Fired: 5}},
		{"end done", end40, 5, at(time.Hour), skip, 100, idxPlan{Fired: 5}},
		{"once done", onceAtBase, 1, at(time.Hour), unspecified, 100, idxPlan{Fired: 1}},
		{"once without at", once(nil), 0, at(time.Hour), unspecified, 100, idxPlan{}},
		{"no kind", &taskdv1.Trigger{}, 3, at(time.Hour), unspecified, 100, idxPlan{Fired: 3}},
		{"negative progress", p10, -1, at(time.Hour), unspecified, 100, idxPlan{Fired: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := dueIdx(tt.trig, tt.fired, tt.now, threshold, tt.policy, tt.maxCatchUp)
			if got.Run != tt.want.Run || !got.Fire.Equal(tt.want.Fire) || got.Fired != tt.want.Fired ||
				got.Misfired != tt.want.Misfired || got.Late != tt.want.Late {
				t.Fatalf("Due(fired=%d, now=base+%v, %v, cap %d) =\n\t%+v\nwant\n\t%+v",
					tt.fired, tt.now.Sub(base), tt.policy, tt.maxCatchUp, got, tt.want)
			}
			checkPlan(t, tt.trig, tt.fired, tt.now, got)
		})
	}
}

// checkPlan checks the invariants every plan keeps.
func checkPlan(t *testing.T, trig *taskdv1.Trigger, fired int64, now time.Time, p idxPlan) {
	t.Helper()
	fire, ok := fireAt(trig, fired)
	if !ok {
		if p != (idxPlan{Fired: fired}) {
			t.Fatalf("no fire time %d, yet plan %+v", fired, p)
		}
		return
	}
	if p.Fired <= fired {
		t.Fatalf("no progress: fired %d -> %d", fired, p.Fired)
	}
	run := int64(0)
	if p.Run {
		run = 1
	}
	if p.Misfired < 0 || p.Misfired+run != p.Fired-fired {
		t.Fatalf("accounting: fired %d -> %d with Misfired %d and Run %v", fired, p.Fired, p.Misfired, p.Run)
	}
	if late := now.Sub(fire) > threshold; p.Late != late {
		t.Fatalf("Late = %v, fire time is %v behind now", p.Late, now.Sub(fire))
	}
	// Every fire time consumed exists.
	if _, ok := fireAt(trig, p.Fired-1); !ok {
		t.Fatalf("progress %d passes the trigger's last fire time", p.Fired)
	}
	if p.Run {
		// The fire time run is one of those consumed.
		found := false
		for k := fired; k < p.Fired && k < fired+1_000_000; k++ {
			if f, _ := fireAt(trig, k); f.Equal(p.Fire) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("ran fire time %v outside [%d, %d)", p.Fire, fired, p.Fired)
		}
	}
	if !p.Late {
		if !p.Run || p.Fired != fired+1 || !p.Fire.Equal(fire) {
			t.Fatalf("on-time plan %+v does not run fire time %d", p, fired)
		}
		return
	}
	// A late plan never consumes a fire time that is still to come.
	if last, _ := fireAt(trig, p.Fired-1); last.After(now) {
		t.Fatalf("late plan consumed future fire time %d (%v)", p.Fired-1, last)
	}
}

// TestDueInvariants runs Due over many deterministic pseudo-random inputs
// and checks the invariants of checkPlan, and for SKIP and FIRE_ONCE_NOW
// that the next fire time left is after now.
func TestDueInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	policies := []taskdv1.MisfirePolicy{unspecified, onceNow, skip, fireAll}
	for i := 0; i < 20000; i++ {
		trig, iv := randPeriodic(r, time.Millisecond, 120_000, 500, 1000)
		if r.IntN(10) == 0 {
			trig = once(ts(base.Add(time.Duration(r.Int64N(int64(time.Hour))))))
		}
		fired := int64(r.IntN(600))
		now := base.Add(time.Duration(r.Int64N(int64(2000 * iv))))
		if f, ok := fireAt(trig, fired); ok && f.After(now) {
			now = f.Add(time.Duration(r.Int64N(int64(3 * threshold)))) // Due's precondition: due by now
		}
		policy := policies[r.IntN(len(policies))]
		maxCatchUp := r.IntN(150)
		p := dueIdx(trig, fired, now, threshold, policy, maxCatchUp)
		checkPlan(t, trig, fired, now, p)
		if !p.Late {
			continue
		}
		eff := policy
		if eff == unspecified {
			eff = DefaultPolicy(trig)
		}
		switch eff {
		case skip, onceNow:
			if next, ok := fireAt(trig, p.Fired); ok && !next.After(now) {
				t.Fatalf("case %d: %v left fire time %d (%v) at or before now %v", i, eff, p.Fired, next, now)
			}
		case fireAll:
			if c := int64(max(maxCatchUp, 1)); p.Misfired > 0 {
				// Capped: exactly maxCatchUp fire times (this one included)
				// remain to run up to now.
				left := int64(0)
				for k := p.Fired - 1; ; k++ {
					f, ok := fireAt(trig, k)
					if !ok || f.After(now) {
						break
					}
					left++
				}
				if left != c {
					t.Fatalf("case %d: FIRE_ALL kept %d fire times, cap %d", i, left, c)
				}
			}
		}
	}
}

// dispatch plays a dispatcher on a simulated clock from now until until:
// it waits for the trigger's next fire time (moving the clock to it) and
// calls Due, as often as Due asks. It returns the simulated instants of the
// runs, the fire times run and the misfires counted.
func dispatch(t *testing.T, trig *taskdv1.Trigger, fired int64, now, until time.Time,
	policy taskdv1.MisfirePolicy, maxCatchUp int) (startedAt, fires []time.Time, misfired, progress int64) {
	t.Helper()
	return simulate(t, trig, fired, now, until,
		func(_ time.Time, fired int64, now time.Time) idxPlan {
			p := dueIdx(trig, fired, now, threshold, policy, maxCatchUp)
			checkPlan(t, trig, fired, now, p)
			return p
		})
}

// TestRestartNoCatchUpBurst: a 1s periodic trigger whose progress is 3 hours
// behind (the node was down) resumes at its next period after the restart
// with no catch-up burst (contract §3.4, §4.4: SKIP is the periodic default).
func TestRestartNoCatchUpBurst(t *testing.T) {
	trig := every(time.Second)
	const fired = 2 * 3600                            // fire time 7200 is at base+2h
	restart := at(5*time.Hour + 250*time.Millisecond) // 3h (and 250ms) later
	until := restart.Add(10*time.Second + 500*time.Millisecond)

	for _, policy := range []taskdv1.MisfirePolicy{unspecified, skip} {
		t.Run(policy.String(), func(t *testing.T) {
			started, fires, misfired, progress := dispatch(t, trig, fired, restart, until, policy, 100)
			if len(started) != 10 {
				t.Fatalf("%d runs in the 10.5s after the restart, want 10: %v", len(started), started)
			}
			if want := at(5*time.Hour + time.Second); !started[0].Equal(want) || !fires[0].Equal(want) {
				t.Fatalf("first run at %v (fire %v), want the next period %v", started[0], fires[0], want)
			}
			for i := range started {
				if !started[i].Equal(fires[i]) {
					t.Fatalf("run %d started at %v for fire time %v: not on time", i, started[i], fires[i])
				}
				if i > 0 && started[i].Sub(started[i-1]) != time.Second {
					t.Fatalf("runs %d and %d are %v apart: a burst", i-1, i, started[i].Sub(started[i-1]))
				}
			}
			// Fire times 7200 .. 18000 (base+2h .. base+5h) were skipped.
			if want := int64(5*3600 - 2*3600 + 1); misfired != want {
				t.Fatalf("misfired %d, want %d", misfired, want)
			}
			if want := int64(5*3600 + 11); progress != want {
				t.Fatalf("progress %d, want %d", progress, want)
			}
		})
	}

	// For contrast, the other policies: FIRE_ONCE_NOW adds exactly one run at
	// the restart, FIRE_ALL a burst bounded by maxCatchUp.
	t.Run("FIRE_ONCE_NOW", func(t *testing.T) {
		started, fires, misfired, _ := dispatch(t, trig, fired, restart, until, onceNow, 100)
		if len(started) != 11 || !started[0].Equal(restart) || !fires[0].Equal(at(2*time.Hour)) {
			t.Fatalf("runs %v (fires %v), want one at the restart for base+2h then 10", started, fires)
		}
		if !started[1].Equal(at(5*time.Hour + time.Second)) {
			t.Fatalf("second run at %v, want the next period", started[1])
		}
		if want := int64(5*3600 - 2*3600); misfired != want {
			t.Fatalf("misfired %d, want %d", misfired, want)
		}
	})
	t.Run("FIRE_ALL", func(t *testing.T) {
		started, fires, misfired, _ := dispatch(t, trig, fired, restart, until, fireAll, 100)
		burst := 0
		for _, s := range started {
			if s.Equal(restart) {
				burst++
			}
		}
		if burst != 100 {
			t.Fatalf("FIRE_ALL ran %d at the restart, want maxCatchUp = 100", burst)
		}
		for i := 1; i < len(fires); i++ {
			if fires[i].Sub(fires[i-1]) != time.Second {
				t.Fatalf("FIRE_ALL runs fire times out of order: %v then %v", fires[i-1], fires[i])
			}
		}
		if !fires[99].Equal(at(5 * time.Hour)) {
			t.Fatalf("last caught-up fire time %v, want the newest missed base+5h", fires[99])
		}
		if want := int64(5*3600-2*3600+1) - 100; misfired != want {
			t.Fatalf("misfired %d, want %d (dropped oldest)", misfired, want)
		}
	})
}

// TestFireAllCatchUpOneByOne: FIRE_ALL runs the missed fire times one at a
// time, oldest kept first, each call advancing by one.
func TestFireAllCatchUpOneByOne(t *testing.T) {
	trig := every(time.Second)
	now := at(249*time.Second + 500*time.Millisecond) // fire times 0..249 passed
	fired := int64(0)
	var fires []time.Time
	for {
		f, ok := fireAt(trig, fired)
		if !ok || f.After(now) {
			break
		}
		p := dueIdx(trig, fired, now, threshold, fireAll, 100)
		if !p.Run {
			t.Fatalf("FIRE_ALL plan without a run: %+v", p)
		}
		if len(fires) == 0 {
			if p.Misfired != 150 || p.Fired != 151 {
				t.Fatalf("first plan %+v, want 150 oldest dropped", p)
			}
		} else if p.Misfired != 0 || p.Fired != fired+1 {
			t.Fatalf("plan %+v after fired %d, want one step", p, fired)
		}
		fires = append(fires, p.Fire)
		fired = p.Fired
	}
	if len(fires) != 100 {
		t.Fatalf("%d runs, want 100", len(fires))
	}
	for i, f := range fires {
		if want := at(time.Duration(150+i) * time.Second); !f.Equal(want) {
			t.Fatalf("run %d fire %v, want %v", i, f, want)
		}
	}
}

// TestExhaustedDuringSkip: a bounded trigger that runs out while its node is
// down ends with its progress at its last fire time, and a dispatcher sees
// no more fire times.
func TestExhaustedDuringSkip(t *testing.T) {
	tests := []struct {
		name string
		trig *taskdv1.Trigger
	}{
		{"count", periodic(per{start: ts(base), interval: durationpb.New(time.Minute), count: 30})},
		{"end", periodic(per{start: ts(base), interval: durationpb.New(time.Minute), end: ts(at(29 * time.Minute))})},
		{"end not on a period", periodic(per{start: ts(base), interval: durationpb.New(time.Minute), end: ts(at(29*time.Minute + 59*time.Second))})},
	}
	for _, tt := range tests {
		for _, policy := range []taskdv1.MisfirePolicy{unspecified, skip, onceNow, fireAll} {
			t.Run(tt.name+"/"+policy.String(), func(t *testing.T) {
				started, _, misfired, progress := dispatch(t, tt.trig, 10, at(24*time.Hour), at(48*time.Hour), policy, 5)
				if progress != 30 {
					t.Fatalf("progress %d, want 30 (all fire times)", progress)
				}
				if int64(len(started))+misfired != 20 {
					t.Fatalf("%d runs + %d misfires, want the 20 remaining fire times", len(started), misfired)
				}
			})
		}
	}
}

func TestBackoff(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name         string
		attempt      int
		initial, max time.Duration
		d            time.Duration // the un-jittered wait
	}{
		{"attempt 0", 0, s, time.Minute, s},
		{"attempt negative", -3, s, time.Minute, s},
		{"attempt 1", 1, s, time.Minute, s},
		{"attempt 2 doubles", 2, s, time.Minute, 2 * s},
		{"attempt 3", 3, s, time.Minute, 4 * s},
		{"attempt 6", 6, s, time.Minute, 32 * s},
		{"attempt 7 capped", 7, s, time.Minute, time.Minute},
		{"attempt 1000 capped", 1000, s, time.Minute, time.Minute},
		{"max not a power of two of initial", 3, 3 * s, 10 * s, 10 * s},
		{"max equals initial", 5, s, s, s},
		{"max below initial", 5, time.Minute, 30 * s, time.Minute},
		{"zero initial is 1s", 1, 0, time.Minute, s},
		{"zero initial doubles from 1s", 3, 0, time.Minute, 4 * s},
		{"negative initial is 1s", 2, -s, time.Minute, 2 * s},
		{"zero max is 10m", 30, s, 0, 10 * time.Minute},
		{"zero max, early attempt", 4, s, 0, 8 * s},
		{"both zero", 2, 0, 0, 2 * s},
		{"huge max: no overflow", 10, 1 << 61, math.MaxInt64, math.MaxInt64},
		{"huge max: doubling to just below", 2, 1 << 61, math.MaxInt64, 1 << 62},
		{"nanosecond initial", 1, 1, time.Minute, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo := tt.d / 2
			if got := Backoff(tt.attempt, tt.initial, tt.max, 0); got != lo {
				t.Fatalf("rnd 0: %v, want d/2 = %v", got, lo)
			}
			if got := Backoff(tt.attempt, tt.initial, tt.max, 0.999); got < lo || got > tt.d ||
				got < lo+time.Duration(0.998*float64(tt.d-lo)) {
				t.Fatalf("rnd 0.999: %v, want close to d = %v and in [%v, %v]", got, tt.d, lo, tt.d)
			}
			if got := Backoff(tt.attempt, tt.initial, tt.max, 0.5); got < lo || got > tt.d {
				t.Fatalf("rnd 0.5: %v not in [%v, %v]", got, lo, tt.d)
			}
			for _, rnd := range []float64{-1, math.NaN(), math.Inf(-1)} {
				if got := Backoff(tt.attempt, tt.initial, tt.max, rnd); got != lo {
					t.Fatalf("rnd %v: %v, want d/2 = %v", rnd, got, lo)
				}
			}
			for _, rnd := range []float64{1, 2, math.Inf(1)} {
				if got := Backoff(tt.attempt, tt.initial, tt.max, rnd); got != tt.d {
					t.Fatalf("rnd %v: %v, want d = %v", rnd, got, tt.d)
				}
			}
		})
	}
}

// TestBackoffMonotonic: for a fixed rnd the wait never shrinks with the
// attempt, always lies in [d/2, d], and is never negative.
func TestBackoffMonotonic(t *testing.T) {
	for _, cfg := range []struct{ initial, max time.Duration }{
		{time.Second, 10 * time.Minute}, {0, 0}, {time.Millisecond, time.Hour},
		{7 * time.Millisecond, 5 * time.Second}, {1 << 40, math.MaxInt64},
	} {
		for _, rnd := range []float64{0, 0.25, 0.5, 0.75, 0.999} {
			prev := time.Duration(0)
			for attempt := 0; attempt <= 200; attempt++ {
				got := Backoff(attempt, cfg.initial, cfg.max, rnd)
				if got <= 0 || got < prev {
					t.Fatalf("%+v rnd %v attempt %d: %v after %v", cfg, rnd, attempt, got, prev)
				}
				hi := Backoff(attempt, cfg.initial, cfg.max, 1)
				if lo := Backoff(attempt, cfg.initial, cfg.max, 0); got < lo || got > hi || hi-lo > lo+1 {
					t.Fatalf("%+v rnd %v attempt %d: %v not in [%v, %v]", cfg, rnd, attempt, got, lo, hi)
				}
				prev = got
			}
		}
	}
}

func BenchmarkFireAt(b *testing.B) {
	trig := periodic(per{start: ts(base), interval: durationpb.New(time.Second),
		end: ts(at(1000 * time.Hour)), count: 1 << 40})
	for i := 0; b.Loop(); i++ {
		if _, ok := fireAt(trig, int64(i&0xffff)); !ok {
			b.Fatal("no fire time")
		}
	}
}

func BenchmarkDue(b *testing.B) {
	trig := every(time.Second)
	cases := []struct {
		name   string
		policy taskdv1.MisfirePolicy
		now    time.Time
	}{
		{"on-time", unspecified, at(1000*time.Second + 5*time.Millisecond)},
		{"skip", skip, at(1000 * time.Hour)},
		{"fire-once-now", onceNow, at(1000 * time.Hour)},
		{"fire-all", fireAll, at(1000 * time.Hour)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if p := dueIdx(trig, 1000, c.now, threshold, c.policy, 100); p.Fired <= 1000 {
					b.Fatal("no progress")
				}
			}
		})
	}
}

// TestDelay: a jitter's delay is from 0 up to the jitter, the same for the
// same seed and fire time, spread over tasks (seeds) and fire times, below
// the gap to a cron trigger's next fire time when they come closer than
// the jitter, and none for a trigger without a jitter, a once or an
// on-start-up trigger.
func TestDelay(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	per := &taskdv1.Trigger{Jitter: durationpb.New(10 * time.Minute), Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
		Start: timestamppb.New(start), Interval: durationpb.New(time.Hour)}}}
	seen := map[time.Duration]bool{}
	for i := range 200 {
		seed := fmt.Sprintf("task-%d\x00#0", i)
		fire := start.Add(time.Duration(i%7) * time.Hour)
		d := Delay(per, seed, fire)
		if d < 0 || d >= 10*time.Minute {
			t.Fatalf("delay %s for %q, want from 0 up to 10m", d, seed)
		}
		if again := Delay(per, seed, fire); again != d {
			t.Fatalf("delay %s then %s for the same task and fire time", d, again)
		}
		seen[d] = true
	}
	if len(seen) < 190 {
		t.Errorf("200 tasks got %d distinct delays: not spread", len(seen))
	}
	byFire := map[time.Duration]bool{}
	for k := range 50 {
		byFire[Delay(per, "one-task\x00#0", start.Add(time.Duration(k)*time.Hour))] = true
	}
	if len(byFire) < 45 {
		t.Errorf("50 fire times of one task got %d distinct delays", len(byFire))
	}

	// Every second, with a jitter of an hour: each delay stays below the
	// second to the next fire time.
	cron := &taskdv1.Trigger{Jitter: durationpb.New(time.Hour), Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "* * * * * ?"}}}
	for k := range 100 {
		if d := Delay(cron, "t\x00#0", start.Add(time.Duration(k)*time.Second)); d < 0 || d >= time.Second {
			t.Fatalf("cron every second: delay %s, want below the 1s gap", d)
		}
	}

	for name, tr := range map[string]*taskdv1.Trigger{
		"no jitter":  {Kind: per.Kind},
		"zero":       {Jitter: durationpb.New(0), Kind: per.Kind},
		"once":       {Jitter: durationpb.New(time.Hour), Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: timestamppb.New(start)}}},
		"on startup": {Jitter: durationpb.New(time.Hour), Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}},
	} {
		if d := Delay(tr, "t\x00#0", start); d != 0 {
			t.Errorf("%s: delay %s, want none", name, d)
		}
	}
}

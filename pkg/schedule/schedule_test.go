package schedule

import (
	"math"
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

package schedule

import (
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// catchUpIdx is CatchUp for fire time number fired.
func catchUpIdx(trig *taskdv1.Trigger, fired int64, now time.Time, policy taskdv1.MisfirePolicy, maxCatchUp int) idxPlan {
	return planIdx(CatchUp, trig, fired, now, threshold, policy, maxCatchUp)
}

// TestCatchUp: on a node that took the task after its fire times passed,
// one past fire time is judged by the threshold as by Due, and several
// follow the policy even when all are within the threshold (60 s here).
func TestCatchUp(t *testing.T) {
	const s = time.Second
	p10 := every(10 * s)
	count3 := periodic(per{start: ts(base), interval: durationpb.New(10 * s), count: 3})
	onceAtBase := once(ts(base))
	tests := []planCase{
		// One fire time past: lateness, as for Due.
		{"one past, on time", p10, 0, at(5 * s), skip, 100, idxPlan{Run: true, Fire: base, Fired: 1}},
		{"one past, from mid progress", p10, 4, at(45 * s), skip, 100, idxPlan{Run: true, Fire: at(40 * s), Fired: 5}},
		{"one past, FIRE_ALL", p10, 0, at(9 * s), fireAll, 100, idxPlan{Run: true, Fire: base, Fired: 1}},
		{"once, within threshold", onceAtBase, 0, at(30 * s), unspecified, 100, idxPlan{Run: true, Fire: base, Fired: 1}},
		{"once, past threshold", onceAtBase, 0, at(time.Hour), unspecified, 100,
			idxPlan{Run: true, Fire: base, Fired: 1, Late: true}},
		{"once, past threshold, SKIP", onceAtBase, 0, at(time.Hour), skip, 100, idxPlan{Fired: 1, Misfired: 1, Late: true}},
		{"last of a count, within threshold", count3, 2, at(50 * s), skip, 100, idxPlan{Run: true, Fire: at(20 * s), Fired: 3}},

		// Several past, all within the threshold: the policy decides.
		{"SKIP four past", p10, 0, at(35 * s), skip, 100, idxPlan{Fired: 4, Misfired: 4, Late: true}},
		{"SKIP two past, now on the second", p10, 0, at(10 * s), skip, 100, idxPlan{Fired: 2, Misfired: 2, Late: true}},
		{"default of periodic is SKIP", p10, 3, at(55 * s), unspecified, 100, idxPlan{Fired: 6, Misfired: 3, Late: true}},
		{"FIRE_ONCE_NOW four past", p10, 0, at(35 * s), onceNow, 100,
			idxPlan{Run: true, Fire: base, Fired: 4, Misfired: 3, Late: true}},
		{"FIRE_ALL four past", p10, 0, at(35 * s), fireAll, 100, idxPlan{Run: true, Fire: base, Fired: 1, Late: true}},
		{"FIRE_ALL four past, cap 2", p10, 0, at(35 * s), fireAll, 2,
			idxPlan{Run: true, Fire: at(20 * s), Fired: 3, Misfired: 2, Late: true}},
		{"count runs out, SKIP", count3, 0, at(55 * s), skip, 100, idxPlan{Fired: 3, Misfired: 3, Late: true}},
		{"count runs out, FIRE_ONCE_NOW", count3, 1, at(55 * s), onceNow, 100,
			idxPlan{Run: true, Fire: at(10 * s), Fired: 3, Misfired: 1, Late: true}},

		// Several past, the oldest beyond the threshold: as Due.
		{"SKIP beyond threshold", p10, 0, at(95 * s), skip, 100, idxPlan{Fired: 10, Misfired: 10, Late: true}},
		{"FIRE_ALL beyond threshold, cap 3", p10, 0, at(95 * s), fireAll, 3,
			idxPlan{Run: true, Fire: at(70 * s), Fired: 8, Misfired: 7, Late: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := catchUpIdx(tt.trig, tt.fired, tt.now, tt.policy, tt.maxCatchUp)
			if got.Run != tt.want.Run || !got.Fire.Equal(tt.want.Fire) || got.Fired != tt.want.Fired ||
				got.Misfired != tt.want.Misfired || got.Late != tt.want.Late {
				t.Fatalf("CatchUp(fired=%d, now=base+%v, %v, cap %d) =\n\t%+v\nwant\n\t%+v",
					tt.fired, tt.now.Sub(base), tt.policy, tt.maxCatchUp, got, tt.want)
			}
		})
	}
}

// takeOver plays a node that takes a trigger at takenAt whose progress is
// fire time number fired, on a simulated clock, until until: it plans with
// CatchUp the fire times that came before takenAt and with Due the later
// ones, waiting for each fire time as a timer would. It returns the
// simulated instants of the runs and the fire times they ran.
func takeOver(t *testing.T, trig *taskdv1.Trigger, fired int64, takenAt, until time.Time,
	policy taskdv1.MisfirePolicy, maxCatchUp int, plan func(*taskdv1.Trigger, int64, time.Time, taskdv1.MisfirePolicy, int) idxPlan) (startedAt, fires []time.Time) {
	t.Helper()
	startedAt, fires, _, _ = simulate(t, trig, fired, takenAt, until, func(fire time.Time, fired int64, now time.Time) idxPlan {
		p := dueIdx(trig, fired, now, threshold, policy, maxCatchUp)
		if fire.Before(takenAt) {
			p = plan(trig, fired, now, policy, maxCatchUp)
		}
		if p.Misfired < 0 || p.Fired <= fired {
			t.Fatalf("plan %+v from fire time %d: no progress", p, fired)
		}
		return p
	})
	return startedAt, fires
}

// TestTakeOverNoBurstWithinThreshold is the failover of a 2 s periodic
// task: its owner ran fire time 3 (base+6s) and died; another node took it
// over at base+17.3s, when fire times 4-8 (base+8s to base+16s) had passed,
// all less than the 60 s threshold ago. Planned with Due alone they all
// run at the take-over, a burst; with CatchUp, SKIP runs none of them and
// FIRE_ONCE_NOW one, both then on the grid; FIRE_ALL replays them all.
func TestTakeOverNoBurstWithinThreshold(t *testing.T) {
	const s = time.Second
	trig := every(2 * s)
	takenAt := at(17*s + 300*time.Millisecond)
	until := at(30 * s)
	due := func(trig *taskdv1.Trigger, fired int64, now time.Time, policy taskdv1.MisfirePolicy, maxCatchUp int) idxPlan {
		return dueIdx(trig, fired, now, threshold, policy, maxCatchUp)
	}
	// Due alone, the behaviour this replaces: five runs at the take-over.
	started, _ := takeOver(t, trig, 4, takenAt, until, skip, 100, due)
	if n := countAt(started, takenAt); n != 5 {
		t.Fatalf("with Due alone %d runs at the take-over, want the burst of 5 this test is about", n)
	}
	onGrid := func(t *testing.T, started, fires []time.Time, from int) {
		t.Helper()
		for i := from; i < len(fires); i++ {
			if !started[i].Equal(fires[i]) || (i > from && fires[i].Sub(fires[i-1]) != 2*s) {
				t.Fatalf("run %d at %v for fire time %v: not on the grid after the take-over (fires %v)", i, started[i], fires[i], fires)
			}
		}
		if want := at(30 * s); !fires[len(fires)-1].Equal(want) {
			t.Fatalf("last run for %v, want %v", fires[len(fires)-1], want)
		}
	}
	for _, policy := range []taskdv1.MisfirePolicy{unspecified, skip} {
		t.Run(policy.String(), func(t *testing.T) {
			started, fires := takeOver(t, trig, 4, takenAt, until, policy, 100, catchUpIdx)
			if !fires[0].Equal(at(18 * s)) {
				t.Fatalf("first run after the take-over for %v, want the next period base+18s (fires %v)", fires[0], fires)
			}
			onGrid(t, started, fires, 0)
		})
	}
	for _, tc := range []struct {
		name       string
		policy     taskdv1.MisfirePolicy
		maxCatchUp int
		replayed   int                   // runs at the take-over, then on the grid
		fires      map[int]time.Duration // fire times run, by run, after base
		want       string
	}{
		{"FIRE_ONCE_NOW", onceNow, 100, 1, map[int]time.Duration{0: 8 * s, 1: 18 * s}, "one at the take-over for base+8s, then base+18s"},
		{"FIRE_ALL", fireAll, 100, 5, map[int]time.Duration{0: 8 * s, 4: 16 * s}, "the five missed replayed at the take-over"},
		{"FIRE_ALL cap 2", fireAll, 2, 2, map[int]time.Duration{0: 14 * s, 1: 16 * s}, "the newest two missed replayed at the take-over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started, fires := takeOver(t, trig, 4, takenAt, until, tc.policy, tc.maxCatchUp, catchUpIdx)
			ok := countAt(started, takenAt) == tc.replayed
			for i, d := range tc.fires {
				ok = ok && fires[i].Equal(at(d))
			}
			if !ok {
				t.Fatalf("runs %v for fires %v: want %s", started, fires, tc.want)
			}
			onGrid(t, started, fires, tc.replayed)
		})
	}
}

func countAt(ts []time.Time, at time.Time) int {
	n := 0
	for _, t := range ts {
		if t.Equal(at) {
			n++
		}
	}
	return n
}

// TestCatchUpInvariants runs CatchUp over many deterministic pseudo-random
// inputs: with one fire time past it plans as Due; with several, SKIP and
// FIRE_ONCE_NOW run at most one and leave the next fire time after now,
// FIRE_ALL leaves at most maxCatchUp of them to run; every plan accounts
// for each fire time it consumes.
func TestCatchUpInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	policies := []taskdv1.MisfirePolicy{unspecified, onceNow, skip, fireAll}
	for i := 0; i < 20000; i++ {
		trig, iv := randPeriodic(r, time.Millisecond, 120_000, 500, 0)
		fired := int64(r.IntN(600))
		f, ok := fireAt(trig, fired)
		if !ok {
			continue
		}
		now := f.Add(time.Duration(r.Int64N(int64(min(20*iv, 3*threshold)))))
		policy := policies[r.IntN(len(policies))]
		maxCatchUp := r.IntN(20)
		p := catchUpIdx(trig, fired, now, policy, maxCatchUp)
		run := int64(0)
		if p.Run {
			run = 1
		}
		if p.Fired <= fired || p.Misfired+run != p.Fired-fired {
			t.Fatalf("case %d: accounting: fired %d -> %d with Misfired %d and Run %v", i, fired, p.Fired, p.Misfired, p.Run)
		}
		second, ok := fireAt(trig, fired+1)
		if !ok || second.After(now) {
			if d := dueIdx(trig, fired, now, threshold, policy, maxCatchUp); d != p {
				t.Fatalf("case %d: one fire time past: CatchUp %+v, Due %+v", i, p, d)
			}
			continue
		}
		if !p.Late {
			t.Fatalf("case %d: several past, yet not late: %+v", i, p)
		}
		eff := policy
		if eff == unspecified {
			eff = DefaultPolicy(trig)
		}
		left := int64(0) // fire times at or before now left to plan
		for k := p.Fired; ; k++ {
			f, ok := fireAt(trig, k)
			if !ok || f.After(now) {
				break
			}
			left++
		}
		switch eff {
		case skip, onceNow:
			if left != 0 {
				t.Fatalf("case %d: %v left %d fire times at or before now", i, eff, left)
			}
		case fireAll:
			if c := int64(max(maxCatchUp, 1)); left+1 > c {
				t.Fatalf("case %d: FIRE_ALL leaves %d to replay after this run, cap %d", i, left, c)
			}
		}
	}
}

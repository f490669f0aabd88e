package schedule

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

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

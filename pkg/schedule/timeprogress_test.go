package schedule

import (
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// nothingExcluded is a calendar set that excludes nothing. Passing it
// instead of nil makes Due take its general path (walking Next) where it
// would take a periodic trigger's closed form.
type nothingExcluded struct{}

func (nothingExcluded) Excludes(time.Time) bool                    { return false }
func (nothingExcluded) NextIncluded(t time.Time) (time.Time, bool) { return t, true }

// TestWalkAgreesWithClosedForm: for periodic triggers the misfire counts
// and the FIRE_ALL catch-up point have a closed form; the walk used for
// cron triggers and calendars must give the same plans.
func TestWalkAgreesWithClosedForm(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	policies := []taskdv1.MisfirePolicy{unspecified, onceNow, skip, fireAll}
	for i := 0; i < 3000; i++ {
		trig, iv := randPeriodic(r, time.Second, 600, 300, 400)
		due, ok := fireAt(trig, int64(r.IntN(200)))
		if !ok {
			continue
		}
		now := due.Add(time.Duration(r.Int64N(int64(300 * iv))))
		policy, maxCatchUp := policies[r.IntN(len(policies))], 1+r.IntN(120)
		closed := Due(trig, due, now, threshold, policy, maxCatchUp, nil)
		walked := Due(trig, due, now, threshold, policy, maxCatchUp, nothingExcluded{})
		if closed != walked {
			t.Fatalf("case %d (%v, due %v, now %v, %v cap %d):\nclosed form %+v\nwalk        %+v",
				i, trig, due.Sub(base), now.Sub(base), policy, maxCatchUp, closed, walked)
		}
	}
}

// weekdaysOnly excludes Saturdays and Sundays (UTC), as a weekly calendar
// would.
type weekdaysOnly struct{}

func (weekdaysOnly) Excludes(t time.Time) bool {
	d := t.UTC().Weekday()
	return d == time.Saturday || d == time.Sunday
}

func (w weekdaysOnly) NextIncluded(t time.Time) (time.Time, bool) {
	for w.Excludes(t) {
		y, m, d := t.UTC().Date()
		t = time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	}
	return t, true
}

// TestExcludedFireTimesAreSkippedNotMisfired: fire times a calendar
// excludes never appear, are not counted as misfires, and a misfire count
// over an excluded stretch counts only included fire times.
func TestExcludedFireTimesAreSkippedNotMisfired(t *testing.T) {
	friday := time.Date(2030, 1, 4, 0, 0, 0, 0, time.UTC) // a Friday
	hourly := periodic(per{start: ts(friday), interval: durationpb.New(time.Hour)})

	// From Friday 23:00 the next fire time is Monday 00:00.
	next, ok := Next(hourly, friday.Add(23*time.Hour), weekdaysOnly{})
	if want := friday.AddDate(0, 0, 3); !ok || !next.Equal(want) {
		t.Fatalf("Next over the weekend = %v, %v; want %v", next, ok, want)
	}
	// First fire time of a trigger starting on a Saturday.
	sat := periodic(per{start: ts(friday.AddDate(0, 0, 1)), interval: durationpb.New(90 * time.Minute)})
	first, ok := First(sat, weekdaysOnly{})
	// Saturday 00:00 + 32 × 1h30 is Monday 00:00, the first grid time no
	// weekend excludes.
	if want := friday.AddDate(0, 0, 3); !ok || !first.Equal(want) {
		t.Fatalf("First from Saturday = %v, %v; want %v", first, ok, want)
	}
	// Down from Friday 22:00 to Monday 01:30: included fire times missed are
	// Fri 22:00, Fri 23:00, Mon 00:00, Mon 01:00 — 4, not 52.
	due := friday.Add(22 * time.Hour)
	now := friday.AddDate(0, 0, 3).Add(90 * time.Minute)
	p := Due(hourly, due, now, threshold, skip, 100, weekdaysOnly{})
	if p.Run || p.Misfired != 4 || !p.NextOK || !p.Next.Equal(friday.AddDate(0, 0, 3).Add(2*time.Hour)) {
		t.Fatalf("SKIP over the weekend = %+v; want 4 misfired, next Monday 02:00", p)
	}
	p = Due(hourly, due, now, threshold, fireAll, 2, weekdaysOnly{})
	if !p.Run || !p.Fire.Equal(friday.AddDate(0, 0, 3)) || p.Misfired != 2 {
		t.Fatalf("FIRE_ALL cap 2 over the weekend = %+v; want Monday 00:00 run, 2 dropped", p)
	}
	// A calendar that excludes everything leaves no fire time.
	if at, ok := Next(hourly, friday, excludeAll{}); ok {
		t.Fatalf("Next under a calendar excluding everything = %v", at)
	}
}

type excludeAll struct{}

func (excludeAll) Excludes(time.Time) bool                  { return true }
func (excludeAll) NextIncluded(time.Time) (time.Time, bool) { return time.Time{}, false }

// TestPolicyResolution: a trigger's own policy wins over the task's, which
// wins over the kind's default; unknown values count as unspecified.
func TestPolicyResolution(t *testing.T) {
	withPolicy := func(tr *taskdv1.Trigger, p taskdv1.MisfirePolicy) *taskdv1.Trigger {
		tr.Misfire = p
		return tr
	}
	cronT := &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 * * * * ?"}}}
	startup := &taskdv1.Trigger{Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}}
	tests := []struct {
		name string
		trig *taskdv1.Trigger
		task taskdv1.MisfirePolicy
		want taskdv1.MisfirePolicy
	}{
		{"once default", once(ts(base)), unspecified, onceNow},
		{"periodic default", every(time.Second), unspecified, skip},
		{"cron default", cronT, unspecified, skip},
		{"on_startup default", startup, unspecified, onceNow},
		{"task policy", every(time.Second), fireAll, fireAll},
		{"trigger beats task", withPolicy(every(time.Second), onceNow), fireAll, onceNow},
		{"trigger unknown, task set", withPolicy(once(ts(base)), 42), skip, skip},
		{"both unknown", withPolicy(every(time.Second), 42), 77, skip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Policy(tt.trig, tt.task); got != tt.want {
				t.Fatalf("Policy = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestOnStartupDue: once per start; an earlier start's run never
// suppresses it; a run of this start does.
func TestOnStartupDue(t *testing.T) {
	start := base.Add(time.Hour)
	tests := []struct {
		name      string
		lastStart time.Time
		want      bool
	}{
		{"no run known", time.Time{}, true},
		{"last run from an earlier start", base, true},
		{"last run 1ns before this start", start.Add(-1), true},
		{"last run at this start", start, false},
		{"last run after this start", start.Add(time.Minute), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OnStartupDue(tt.lastStart, start); got != tt.want {
				t.Fatalf("OnStartupDue = %v, want %v", got, tt.want)
			}
		})
	}
}

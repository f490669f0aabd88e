package schedule

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestMisfireMatrix plays every misfire policy against every trigger kind
// on a fake clock: the trigger's fire time came due at due and the node
// looks at it at now, 3m30s later (the threshold is 60s), with fire times
// every minute for the recurring kinds (4 missed: due, +1m, +2m, +3m).
// Each cell says whether a run starts, which fire time it serves, how many
// fire times are misfired without a run, and the trigger's next fire time.
func TestMisfireMatrix(t *testing.T) {
	due := time.Date(2030, 3, 4, 10, 0, 0, 0, time.UTC)
	now := due.Add(3*time.Minute + 30*time.Second)
	min := func(k int) time.Time { return due.Add(time.Duration(k) * time.Minute) }
	kinds := map[string]*taskdv1.Trigger{
		"once":       once(ts(due)),
		"periodic":   periodic(per{start: ts(due), interval: durationpb.New(time.Minute)}),
		"cron":       {Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 * * * * ?", TimeZone: "Europe/Berlin"}}},
		"on_startup": {Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}},
	}
	type cell struct {
		run      bool
		fire     time.Time
		misfired int64
		next     time.Time // zero: none
	}
	none := time.Time{}
	want := map[string]map[taskdv1.MisfirePolicy]cell{
		"once": {
			unspecified: {run: true, fire: due, next: none}, // FIRE_ONCE_NOW is once's default
			onceNow:     {run: true, fire: due, next: none},
			skip:        {misfired: 1, next: none},
			fireAll:     {run: true, fire: due, next: none},
		},
		"periodic": {
			unspecified: {misfired: 4, next: min(4)}, // SKIP is the recurring default
			onceNow:     {run: true, fire: due, misfired: 3, next: min(4)},
			skip:        {misfired: 4, next: min(4)},
			fireAll:     {run: true, fire: due, next: min(1)}, // within --max-catch-up: one by one
		},
		"cron": {
			unspecified: {misfired: 4, next: min(4)},
			onceNow:     {run: true, fire: due, misfired: 3, next: min(4)},
			skip:        {misfired: 4, next: min(4)},
			fireAll:     {run: true, fire: due, next: min(1)},
		},
		"on_startup": { // due at the node's dispatch start; one fire time per start
			unspecified: {run: true, fire: due, next: none},
			onceNow:     {run: true, fire: due, next: none},
			skip:        {misfired: 1, next: none},
			fireAll:     {run: true, fire: due, next: none},
		},
	}
	for kind, trig := range kinds {
		for policy, w := range want[kind] {
			t.Run(fmt.Sprintf("%s/%v", kind, policy), func(t *testing.T) {
				p := Due(trig, due, now, threshold, policy, 100, nil)
				if p.Run != w.run || !p.Fire.Equal(w.fire) || p.Misfired != w.misfired || !p.Late ||
					p.NextOK != !w.next.IsZero() || !p.Next.Equal(w.next) {
					t.Fatalf("Due = %+v\nwant run %v fire %v misfired %d next %v (late)", p, w.run, w.fire, w.misfired, w.next)
				}
				// On time (within the threshold) every policy runs the fire
				// time itself and nothing misfires.
				onTime := Due(trig, due, due.Add(threshold), threshold, policy, 100, nil)
				if !onTime.Run || !onTime.Fire.Equal(due) || onTime.Misfired != 0 || onTime.Late {
					t.Fatalf("on time: Due = %+v, want a run of %v", onTime, due)
				}
			})
		}
	}
	// FIRE_ALL beyond the cap drops the oldest: cap 2 keeps +2m and +3m.
	for _, kind := range []string{"periodic", "cron"} {
		p := Due(kinds[kind], due, now, threshold, fireAll, 2, nil)
		if !p.Run || !p.Fire.Equal(min(2)) || p.Misfired != 2 || !p.Next.Equal(min(3)) {
			t.Fatalf("%s FIRE_ALL cap 2: %+v, want run of +2m, 2 dropped, next +3m", kind, p)
		}
	}
}

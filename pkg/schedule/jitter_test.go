package schedule

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

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

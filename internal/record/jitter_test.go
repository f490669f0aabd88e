package record

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestJitterDelaysWhenDueNotTheFireTime: a trigger's jitter delays when
// its fire time is due (Due, NextDue), by the same delay for the same
// record wherever it is computed (a copy stands for another node or a
// restart), while the stored progress and the run's fire time stay the
// undelayed fire times. Lateness counts from the delayed instant: a
// start a moment after it is on time under SKIP (whose late fire times do
// not run), one more than the threshold after it is late.
func TestJitterDelaysWhenDueNotTheFireTime(t *testing.T) {
	tr := rEvery(rt0, time.Hour, 0)
	tr.Jitter = durationpb.New(30 * time.Minute)
	rec := newRecord(func(s *taskdv1.TaskSpec) { s.Misfire = taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP }, tr)
	rec.Id = "01m8n00fnm1tq0b5anbv2qw959"

	at, _, ok := Due(rec, 0, Timing{Now: rt0.Add(-time.Hour)})
	delay := at.Sub(rt0)
	if !ok || delay <= 0 || delay >= 30*time.Minute {
		t.Fatalf("due %s (ok %v): want the fire time %s delayed by 0 to 30m (a zero delay is one chance in 1.8e12)", at, ok, rt0)
	}
	if next, _ := NextDue(rec.Id, rec.Spec.Triggers, rec.Triggers); !next.Equal(at) {
		t.Fatalf("NextDue %s, Due %s", next, at)
	}
	if again, _, _ := Due(Clone(rec), 0, Timing{Now: rt0}); !again.Equal(at) {
		t.Fatalf("a copy of the record is due at %s, the record at %s", again, at)
	}
	other := Clone(rec)
	other.Id = "01m8n00fnm1tq0b5anbv2qw95a"
	if o, _, _ := Due(other, 0, Timing{Now: rt0}); o.Equal(at) {
		t.Errorf("two tasks on one schedule due at the same instant %s", o)
	}

	// On time: a second after the delayed instant, far past the threshold
	// after the fire time itself.
	p := PlanStart(rec, rNode, rInc, rEpoch, Timing{Now: at.Add(time.Second), Threshold: rThreshold, MaxCatchUp: rMaxCatchUp})
	if !p.Runs || !p.Fire.Equal(rt0) || !p.Marker.FireTime.AsTime().Equal(rt0) {
		t.Fatalf("start a second after the delayed instant: runs %v fire %s, want the run of fire time %s", p.Runs, p.Fire, rt0)
	}
	if !tsEq(p.Rec.Triggers[0].Next, rt0.Add(time.Hour)) {
		t.Fatalf("progress %s, want the next undelayed fire time %s", fmtTS(p.Rec.Triggers[0].Next), rt0.Add(time.Hour))
	}

	// Late: more than the threshold after the delayed instant.
	late := PlanStart(rec, rNode, rInc, rEpoch, Timing{Now: at.Add(rThreshold + time.Second), Threshold: rThreshold, MaxCatchUp: rMaxCatchUp})
	if late.Runs || late.Misfired != 1 {
		t.Fatalf("start %s after the delayed instant: runs %v misfired %d, want it skipped", rThreshold+time.Second, late.Runs, late.Misfired)
	}
}

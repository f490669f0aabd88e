package schedule

import (
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// FuzzTrigger decodes arbitrary bytes as a stored trigger and checks the
// arithmetic on it at any progress and clock reading: nothing panics; fire
// times are non-decreasing in their number and, once a trigger has no fire
// time k, it has none after k; Due never moves progress backwards, counts
// no negative misfires, runs only a fire time the trigger has, and repeated
// Due calls run fire times in non-decreasing order.
func FuzzTrigger(f *testing.F) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tr := range []*taskdv1.Trigger{
		{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: timestamppb.New(start)}}},
		{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
			Start: timestamppb.New(start), Interval: durationpb.New(time.Minute)}}},
		{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
			Start: timestamppb.New(start), Interval: durationpb.New(time.Second), Count: 5}}},
		{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
			Start: timestamppb.New(start), Interval: durationpb.New(time.Hour),
			End: timestamppb.New(start.Add(5 * time.Hour))}}},
		{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
			Start: timestamppb.New(start), Interval: durationpb.New(time.Millisecond)}}},
		// Instants far outside what validation lets in: the arithmetic
		// saturates instead of wrapping.
		{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
			Start:    &timestamppb.Timestamp{Seconds: math.MaxInt64 - 62135596800 - 1800},
			Interval: durationpb.New(time.Hour)}}},
		{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
			Start:    &timestamppb.Timestamp{Seconds: math.MinInt64, Nanos: -1},
			Interval: &durationpb.Duration{Seconds: math.MaxInt64}, End: &timestamppb.Timestamp{Seconds: math.MaxInt64}}}},
		{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: &timestamppb.Timestamp{Nanos: 2e9}}}},
		{},
	} {
		b, err := proto.Marshal(tr)
		if err != nil {
			f.Fatal(err)
		}
		for _, policy := range []int32{0, 1, 2, 3, 99} {
			f.Add(b, int64(0), start.Add(90*time.Minute).UnixNano(), int64(time.Minute), policy, 100)
		}
		f.Add(b, int64(3), start.Add(-time.Hour).UnixNano(), int64(0), int32(3), 0)
		f.Add(b, int64(1<<40), start.UnixNano(), int64(-1), int32(2), -5)
	}
	f.Fuzz(func(t *testing.T, b []byte, fired, nowNanos, thresholdNanos int64, policy int32, maxCatchUp int) {
		tr := &taskdv1.Trigger{}
		if proto.Unmarshal(b, tr) != nil {
			return
		}
		now := time.Unix(0, nowNanos).UTC()
		threshold := time.Duration(thresholdNanos)

		// Fire times around fired, and around 0.
		for _, from := range []int64{0, fired} {
			var prev time.Time
			prevOK, ended := false, false
			for k := from; k < from+8 && k >= from; k++ {
				at, ok := fireAt(tr, k)
				if ok && ended {
					t.Fatalf("fireAt(%v, %d) = %v after fire time %d did not exist", tr, k, at, k-1)
				}
				if ok && prevOK && at.Before(prev) {
					t.Fatalf("fireAt(%v, %d) = %v is before fire time %d, %v", tr, k, at, k-1, prev)
				}
				if !ok && k >= 0 {
					ended = true
				}
				prev, prevOK = at, ok
			}
		}

		var lastRun time.Time
		ran := false
		for i := 0; i < 16; i++ {
			p := dueIdx(tr, fired, now, threshold, taskdv1.MisfirePolicy(policy), maxCatchUp)
			if p.Fired < fired || p.Misfired < 0 {
				t.Fatalf("Due(%v, fired %d, now %v) = %+v: progress back or negative misfires", tr, fired, now, p)
			}
			if p.Run {
				// The fire time run is the first one due, or the first kept
				// after the misfired ones dropped.
				found := false
				for _, k := range []int64{fired, fired + p.Misfired} {
					at, ok := fireAt(tr, k)
					found = found || (ok && k < p.Fired && at.Equal(p.Fire))
				}
				if !found {
					t.Fatalf("Due(%v, fired %d, now %v) = %+v runs neither fire time %d nor %d", tr, fired, now, p, fired, fired+p.Misfired)
				}
				if ran && p.Fire.Before(lastRun) {
					t.Fatalf("Due(%v, fired %d, now %v) runs %v after %v", tr, fired, now, p.Fire, lastRun)
				}
				lastRun, ran = p.Fire, true
			}
			if p.Fired == fired {
				break
			}
			fired = p.Fired
		}
	})
}

package schedule

import (
	"testing"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// BenchmarkNext is the cost of advancing a trigger's progress by one fire
// time, as the node does at every run: for cron, the parsed expression
// comes from the shared cache.
func BenchmarkNext(b *testing.B) {
	from := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		t    *taskdv1.Trigger
	}{
		{"periodic", every(time.Minute)},
		{"cron every 5 min", &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0/5 * * * ?"}}}},
		{"cron weekdays 02:30 Berlin", &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{
			Expression: "0 30 2 ? * MON-FRI", TimeZone: "Europe/Berlin"}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			at := from
			for b.Loop() {
				next, ok := Next(tc.t, at, nil)
				if !ok {
					b.Fatal("no next fire time")
				}
				at = next
				if at.Year() > 2090 { // stay within cron's years
					at = from
				}
			}
		})
	}
}

package taskflags

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// testNow is the clock BuildScheduleRequest sees in tests.
var testNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// once, periodic, cronTriggers and onStartup help to write the expected
// triggers (spec, in schedule_test.go, the expected requests).
func once(o *taskdv1.OnceTrigger) []*taskdv1.Trigger {
	return []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: o}}}
}

func periodic(p *taskdv1.PeriodicTrigger) []*taskdv1.Trigger {
	return []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: p}}}
}

func cronTriggers(cs ...*taskdv1.CronTrigger) []*taskdv1.Trigger {
	var out []*taskdv1.Trigger
	for _, c := range cs {
		out = append(out, &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: c}})
	}
	return out
}

func onStartup() *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}}
}

func ts(s string) *timestamppb.Timestamp {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return timestamppb.New(t)
}

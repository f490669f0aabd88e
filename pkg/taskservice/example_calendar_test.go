package taskservice_test

import (
	"context"
	"fmt"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Exclude days from a schedule with calendars: "weekends" excludes Saturday
// and Sunday, "holidays" adds Christmas Day to it (its base). A daily cron
// trigger under "holidays" skips the excluded days, as PreviewTriggers
// shows without scheduling anything. A task names the calendar the same
// way (TaskSpec.Calendars).
func ExampleNode_CreateCalendar() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, stop := tst.ExampleNode(taskservice.Config{})
	defer stop()

	for _, c := range []*taskdv1.Calendar{{
		Name:     "weekends",
		TimeZone: "Europe/Berlin",
		Kind:     &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: []string{"SAT", "SUN"}}},
	}, {
		Name:     "holidays",
		TimeZone: "Europe/Berlin",
		Base:     "weekends",
		Kind:     &taskdv1.Calendar_Dates{Dates: &taskdv1.DatesCalendar{Dates: []*taskdv1.Date{{Year: 2026, Month: 12, Day: 25}}}},
	}} {
		if _, err := node.CreateCalendar(ctx, c, false); err != nil {
			panic(err)
		}
	}

	daily := &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 9 * * ?", TimeZone: "Europe/Berlin"}}}
	from := time.Date(2026, 12, 23, 0, 0, 0, 0, time.UTC)
	times, err := node.PreviewTriggers(ctx, []*taskdv1.Trigger{daily}, []string{"holidays"}, from, 4)
	if err != nil {
		panic(err)
	}
	for _, t := range times {
		fmt.Println(t.Local)
	}
	// Output:
	// 2026-12-23T09:00:00+01:00
	// 2026-12-24T09:00:00+01:00
	// 2026-12-28T09:00:00+01:00
	// 2026-12-29T09:00:00+01:00
}

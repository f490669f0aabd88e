package render

import (
	"bytes"
	"strings"
	"testing"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func date(y, m, d int32) *taskdv1.Date { return &taskdv1.Date{Year: y, Month: m, Day: d} }

// sampleCalendars has one calendar of each kind.
func sampleCalendars() []*taskdv1.Calendar {
	var many []*taskdv1.Date
	for d := int32(20); d <= 31; d++ {
		many = append(many, date(2026, 12, d))
	}
	return []*taskdv1.Calendar{
		{Name: "early", TimeZone: "Europe/Berlin", Kind: &taskdv1.Calendar_Cron{Cron: &taskdv1.CronCalendar{Expression: "* * 0-7 ? * *"}}},
		{Name: "holidays", Kind: &taskdv1.Calendar_Dates{Dates: &taskdv1.DatesCalendar{Dates: many}}},
		{Name: "month-end", Kind: &taskdv1.Calendar_Monthly{Monthly: &taskdv1.MonthlyCalendar{Days: []int32{1, -1}}}},
		{Name: "night", Kind: &taskdv1.Calendar_Daily{Daily: &taskdv1.DailyCalendar{Start: "06:00", End: "22:00", Invert: true}}},
		{Name: "weekend", TimeZone: "Europe/Berlin", Base: "holidays", Description: "no batch\truns", Revision: 12,
			Kind: &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: []string{"SAT", "SUN"}}}},
		{Name: "xmas", Kind: &taskdv1.Calendar_Annual{Annual: &taskdv1.AnnualCalendar{Days: []*taskdv1.Date{date(0, 12, 25), date(0, 1, 1)}}}},
	}
}

func TestWriteCalendarsTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCalendarsTable(&b, sampleCalendars()); err != nil {
		t.Fatal(err)
	}
	want := `NAME       KIND     ZONE           BASE      RULE
early      cron     Europe/Berlin  -         "* * 0-7 ? * *"
holidays   dates    UTC            -         2026-12-20,2026-12-21,2026-12-22,2026-12-23,2026-12-24 and 7 more
month-end  monthly  UTC            -         1,-1
night      daily    UTC            -         06:00-22:00 inverted (all but the window)
weekend    weekly   Europe/Berlin  holidays  SAT,SUN
xmas       annual   UTC            -         12-25,01-01
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteCalendarDetail(t *testing.T) {
	cals := sampleCalendars()
	var b bytes.Buffer
	if err := WriteCalendarDetail(&b, cals[4]); err != nil {
		t.Fatal(err)
	}
	want := `Name:         weekend
Kind:         weekly
Rule:         SAT,SUN
Time zone:    Europe/Berlin
Base:         holidays
Description:  no batch runs
Revision:     12
`
	if b.String() != want {
		t.Errorf("detail:\n%s\nwant:\n%s", b.String(), want)
	}
	// The detail shows a long list in full.
	b.Reset()
	if err := WriteCalendarDetail(&b, cals[1]); err != nil {
		t.Fatal(err)
	}
	var rule []string
	for _, l := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "Rule:"); ok {
			rule = append(rule, strings.TrimSpace(v))
		}
	}
	if len(rule) != 1 || strings.Count(rule[0], ",") != 11 {
		t.Errorf("Rule of twelve dates: %q", rule)
	}
}

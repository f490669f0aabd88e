package calendar

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// at parses an RFC 3339 instant; the offset in the text says which of a
// repeated local hour is meant.
func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func datesCal(name, zone string, ds ...[3]int32) *taskdv1.Calendar {
	k := &taskdv1.DatesCalendar{}
	for _, d := range ds {
		k.Dates = append(k.Dates, &taskdv1.Date{Year: d[0], Month: d[1], Day: d[2]})
	}
	return &taskdv1.Calendar{Name: name, TimeZone: zone, Kind: &taskdv1.Calendar_Dates{Dates: k}}
}

func annualDays(name, zone string, ds ...[2]int32) *taskdv1.Calendar {
	k := &taskdv1.AnnualCalendar{}
	for _, d := range ds {
		k.Days = append(k.Days, &taskdv1.Date{Month: d[0], Day: d[1]})
	}
	return &taskdv1.Calendar{Name: name, TimeZone: zone, Kind: &taskdv1.Calendar_Annual{Annual: k}}
}

func monthlyDays(name, zone string, days ...int32) *taskdv1.Calendar {
	return &taskdv1.Calendar{Name: name, TimeZone: zone,
		Kind: &taskdv1.Calendar_Monthly{Monthly: &taskdv1.MonthlyCalendar{Days: days}}}
}

func weeklyDays(name, zone string, days ...string) *taskdv1.Calendar {
	return &taskdv1.Calendar{Name: name, TimeZone: zone,
		Kind: &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: days}}}
}

func dailyWindow(name, zone, start, end string, invert bool) *taskdv1.Calendar {
	return &taskdv1.Calendar{Name: name, TimeZone: zone,
		Kind: &taskdv1.Calendar_Daily{Daily: &taskdv1.DailyCalendar{Start: start, End: end, Invert: invert}}}
}

func cronExpr(name, zone, expr string) *taskdv1.Calendar {
	return &taskdv1.Calendar{Name: name, TimeZone: zone,
		Kind: &taskdv1.Calendar_Cron{Cron: &taskdv1.CronCalendar{Expression: expr}}}
}

func withBase(c *taskdv1.Calendar, base string) *taskdv1.Calendar {
	c.Base = base
	return c
}

func store(cals ...*taskdv1.Calendar) Lookup {
	m := map[string]*taskdv1.Calendar{}
	for _, c := range cals {
		m[c.Name] = c
	}
	return func(name string) (*taskdv1.Calendar, bool) {
		c, ok := m[name]
		return c, ok
	}
}

func mustCompile(tb testing.TB, c *taskdv1.Calendar, stored ...*taskdv1.Calendar) *Calendar {
	tb.Helper()
	out, err := Compile(c, store(stored...))
	if err != nil {
		tb.Fatalf("Compile(%s): %v", c.Name, err)
	}
	return out
}

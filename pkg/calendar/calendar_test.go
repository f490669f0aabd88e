package calendar

import (
	"strings"
	"sync"
	"testing"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// point is one instant of a calendar case: whether the calendar excludes
// it and, if it does, what NextIncluded answers ("none" for ok=false). An
// instant that is not excluded must come back from NextIncluded as it is.
type point struct {
	t    string
	excl bool
	next string
}

func free(t string) point       { return point{t: t} }
func excl(t, next string) point { return point{t: t, excl: true, next: next} }
func checkPoints(tb testing.TB, c *Calendar, points []point) {
	tb.Helper()
	for _, p := range points {
		t := at(p.t)
		if got := c.Excludes(t); got != p.excl {
			tb.Errorf("%s: Excludes(%s) = %v, want %v", c.Name(), p.t, got, p.excl)
		}
		got, ok := c.NextIncluded(t)
		switch {
		case !p.excl:
			if !ok || !got.Equal(t) {
				tb.Errorf("%s: NextIncluded(%s) = %s, %v; want the instant itself", c.Name(), p.t, got.Format(time.RFC3339Nano), ok)
			}
		case p.next == "none":
			if ok {
				tb.Errorf("%s: NextIncluded(%s) = %s, want none", c.Name(), p.t, got.Format(time.RFC3339Nano))
			}
		default:
			if want := at(p.next); !ok || !got.Equal(want) {
				tb.Errorf("%s: NextIncluded(%s) = %s (%s), %v; want %s (%s)", c.Name(), p.t,
					got.Format(time.RFC3339Nano), got.UTC().Format(time.RFC3339), ok, p.next, want.UTC().Format(time.RFC3339))
			}
		}
	}
}

// The zones' transitions the cases lean on (from the tz database):
//
//	Europe/Berlin       2026-03-29 02:00 → 03:00 (+01 → +02); 2026-10-25 03:00 → 02:00
//	America/New_York    2026-03-08 02:00 → 03:00 (-05 → -04); 2026-11-01 02:00 → 01:00
//	Australia/Lord_Howe 2026-04-05 02:00 → 01:30 (+11 → +10:30); 2026-10-04 02:00 → 02:30
//	America/Havana      2026-03-08 00:00 → 01:00 (-05 → -04): that Sunday has no midnight
//	America/Santiago    2026-04-05 00:00 → Saturday 23:00 (-03 → -04): a 25-hour Saturday;
//	                    2026-09-06 00:00 → 01:00 (-04 → -03): that Sunday has no midnight
func TestKinds(t *testing.T) {
	cases := []struct {
		name   string
		cal    *taskdv1.Calendar
		stored []*taskdv1.Calendar
		points []point
	}{
		{name: "weekly weekend, Berlin, spring-forward Sunday of 23 hours",
			cal: weeklyDays("weekend", "Europe/Berlin", "SAT", "SUN"),
			points: []point{
				free("2026-03-27T23:59:59.999999999+01:00"),
				excl("2026-03-28T00:00:00+01:00", "2026-03-30T00:00:00+02:00"),
				excl("2026-03-28T10:00:00+01:00", "2026-03-30T00:00:00+02:00"),
				excl("2026-03-29T01:59:59+01:00", "2026-03-30T00:00:00+02:00"),
				excl("2026-03-29T03:00:00+02:00", "2026-03-30T00:00:00+02:00"),
				excl("2026-03-29T23:59:59.999999999+02:00", "2026-03-30T00:00:00+02:00"),
				free("2026-03-30T00:00:00+02:00"),
			}},
		{name: "weekly weekend, Berlin, fall-back Sunday of 25 hours",
			cal: weeklyDays("weekend", "Europe/Berlin", "SAT", "SUN"),
			points: []point{
				excl("2026-10-25T02:30:00+02:00", "2026-10-26T00:00:00+01:00"),
				excl("2026-10-25T02:30:00+01:00", "2026-10-26T00:00:00+01:00"),
				excl("2026-10-25T23:59:59+01:00", "2026-10-26T00:00:00+01:00"),
				free("2026-10-26T00:00:00+01:00"),
			}},
		{name: "weekly Sunday, New York",
			cal: weeklyDays("sundays", "America/New_York", "SUN"),
			points: []point{
				free("2026-03-07T23:59:59-05:00"),
				excl("2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00"),
				excl("2026-03-08T01:59:59-05:00", "2026-03-09T00:00:00-04:00"),
				excl("2026-11-01T01:30:00-04:00", "2026-11-02T00:00:00-05:00"),
				excl("2026-11-01T01:30:00-05:00", "2026-11-02T00:00:00-05:00"),
				free("2026-11-02T00:00:00-05:00"),
			}},
		{name: "weekly Sunday, Lord Howe, a Sunday of 23.5 hours",
			cal: weeklyDays("sundays", "Australia/Lord_Howe", "SUN"),
			points: []point{
				free("2026-10-03T23:59:59+10:30"),
				excl("2026-10-04T00:00:00+10:30", "2026-10-05T00:00:00+11:00"),
				excl("2026-10-04T02:30:00+11:00", "2026-10-05T00:00:00+11:00"),
				// 24.5 hours: 01:30-02:00 happens twice.
				excl("2026-04-05T00:00:00+11:00", "2026-04-06T00:00:00+10:30"),
				excl("2026-04-05T01:45:00+10:30", "2026-04-06T00:00:00+10:30"),
			}},
		{name: "weekly Sunday, Havana, a Sunday that starts at 01:00",
			cal: weeklyDays("sundays", "America/Havana", "SUN"),
			points: []point{
				free("2026-03-07T23:59:59.999-05:00"),
				excl("2026-03-08T01:00:00-04:00", "2026-03-09T00:00:00-04:00"),
				free("2026-03-09T00:00:00-04:00"),
			}},
		{name: "weekly Saturday, Havana: the next day starts without midnight",
			cal: weeklyDays("saturdays", "America/Havana", "SAT"),
			points: []point{
				excl("2026-03-07T12:00:00-05:00", "2026-03-08T01:00:00-04:00"),
			}},
		{name: "weekly Saturday, Santiago: 25 hours, and a Saturday before a Sunday without midnight",
			cal: weeklyDays("saturdays", "America/Santiago", "SAT"),
			points: []point{
				excl("2026-04-04T00:00:00-03:00", "2026-04-05T00:00:00-04:00"),
				excl("2026-04-04T23:30:00-03:00", "2026-04-05T00:00:00-04:00"),
				excl("2026-04-04T23:30:00-04:00", "2026-04-05T00:00:00-04:00"),
				excl("2026-09-05T12:00:00-04:00", "2026-09-06T01:00:00-03:00"),
				free("2026-09-06T01:00:00-03:00"),
			}},
		{name: "weekly every day",
			cal: weeklyDays("never", "", "MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"),
			points: []point{
				excl("2026-01-01T00:00:00Z", "none"),
				excl("2099-12-31T23:59:59Z", "none"),
				excl("2100-01-01T00:00:00Z", "none"),
			}},
		{name: "dates, Berlin, runs of holidays and a 25-hour holiday",
			cal: datesCal("holidays", "Europe/Berlin", [3]int32{2026, 12, 24}, [3]int32{2026, 12, 25},
				[3]int32{2026, 12, 26}, [3]int32{2027, 1, 1}, [3]int32{2026, 10, 25}),
			points: []point{
				free("2026-12-23T23:59:59.999999999+01:00"),
				excl("2026-12-24T08:00:00+01:00", "2026-12-27T00:00:00+01:00"),
				excl("2026-12-26T23:00:00+01:00", "2026-12-27T00:00:00+01:00"),
				free("2026-12-27T00:00:00+01:00"),
				free("2026-12-31T23:59:59+01:00"),
				excl("2027-01-01T00:00:00+01:00", "2027-01-02T00:00:00+01:00"),
				excl("2026-10-25T00:00:00+02:00", "2026-10-26T00:00:00+01:00"),
				free("2025-12-25T12:00:00+01:00"), // a dated holiday is one year's only
			}},
		{name: "dates in UTC read in UTC",
			cal: datesCal("leap-day", "", [3]int32{2028, 2, 29}),
			points: []point{
				free("2028-02-29T00:00:00+01:00"), // still 28 February in UTC
				excl("2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z"),
			}},
		{name: "annual, 29 February in leap years only",
			cal: annualDays("leap", "America/New_York", [2]int32{2, 29}),
			points: []point{
				excl("2028-02-29T12:00:00-05:00", "2028-03-01T00:00:00-05:00"),
				free("2027-02-28T12:00:00-05:00"),
				free("2027-03-01T00:00:00-05:00"),
				excl("2032-02-29T00:00:00-05:00", "2032-03-01T00:00:00-05:00"),
			}},
		{name: "annual across the new year",
			cal: annualDays("new-year", "", [2]int32{12, 31}, [2]int32{1, 1}, [2]int32{12, 25}),
			points: []point{
				excl("2026-12-31T10:00:00Z", "2027-01-02T00:00:00Z"),
				excl("2030-12-25T00:00:00Z", "2030-12-26T00:00:00Z"),
				free("2030-12-26T00:00:00Z"),
			}},
		{name: "annual every day but 29 February",
			cal: func() *taskdv1.Calendar {
				var all [][2]int32
				for m := time.January; m <= time.December; m++ {
					for d := 1; d <= daysIn(2027, m); d++ {
						all = append(all, [2]int32{int32(m), int32(d)})
					}
				}
				return annualDays("leap-only", "", all...)
			}(),
			points: []point{
				excl("2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"),
				free("2028-02-29T23:59:59Z"),
				excl("2096-03-01T00:00:00Z", "none"), // 2100 is no leap year, and past the search
			}},
		{name: "monthly last day, leap and non-leap February",
			cal: monthlyDays("month-end", "", -1),
			points: []point{
				excl("2027-02-28T12:00:00Z", "2027-03-01T00:00:00Z"),
				free("2028-02-28T12:00:00Z"),
				excl("2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z"),
				excl("2026-04-30T00:00:00Z", "2026-05-01T00:00:00Z"),
				excl("2026-12-31T00:00:00Z", "2027-01-01T00:00:00Z"),
				free("2026-12-30T23:59:59Z"),
			}},
		{name: "monthly 31 is never in a 30-day month",
			cal: monthlyDays("thirty-first", "", 31),
			points: []point{
				free("2026-04-30T12:00:00Z"),
				free("2026-05-01T00:00:00Z"),
				excl("2026-05-31T00:00:00Z", "2026-06-01T00:00:00Z"),
				free("2026-02-28T12:00:00Z"),
			}},
		{name: "monthly runs across a month end",
			cal: monthlyDays("turn", "", 30, 31, 1, -1),
			points: []point{
				excl("2026-05-30T10:00:00Z", "2026-06-02T00:00:00Z"),
				excl("2027-02-28T10:00:00Z", "2027-03-02T00:00:00Z"),
				excl("2028-02-29T10:00:00Z", "2028-03-02T00:00:00Z"),
				free("2028-02-28T10:00:00Z"),
			}},
		{name: "monthly on Berlin's spring-forward day",
			cal: monthlyDays("twenty-ninth", "Europe/Berlin", 29),
			points: []point{
				excl("2026-03-29T01:30:00+01:00", "2026-03-30T00:00:00+02:00"),
				free("2026-03-28T23:59:59+01:00"),
			}},
		{name: "monthly every day",
			cal: monthlyDays("always", "", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
				21, 22, 23, 24, 25, 26, 27, 28, 29, 30, -1),
			points: []point{excl("2026-06-15T00:00:00Z", "none")}},
		{name: "daily window, Berlin, on both transition days",
			cal: dailyWindow("night", "Europe/Berlin", "02:00", "03:00", false),
			points: []point{
				excl("2026-03-28T02:30:00+01:00", "2026-03-28T03:00:00+01:00"),
				free("2026-03-28T03:00:00+01:00"),
				free("2026-03-28T01:59:59.999+01:00"),
				// Spring forward: 02:00-03:00 never shows, nothing is excluded.
				free("2026-03-29T01:59:59+01:00"),
				free("2026-03-29T03:00:00+02:00"),
				// Fall back: 02:00-03:00 shows twice, both are excluded.
				excl("2026-10-25T02:15:00+02:00", "2026-10-25T03:00:00+01:00"),
				excl("2026-10-25T02:59:59+01:00", "2026-10-25T03:00:00+01:00"),
			}},
		{name: "daily window half inside Berlin's gap",
			cal: dailyWindow("night", "Europe/Berlin", "02:30", "03:30", false),
			points: []point{
				free("2026-03-29T01:59:59+01:00"),
				excl("2026-03-29T03:00:00+02:00", "2026-03-29T03:30:00+02:00"),
			}},
		{name: "daily window, Lord Howe's half-hour shifts",
			cal: dailyWindow("night", "Australia/Lord_Howe", "01:45", "02:15", false),
			points: []point{
				// Fall back at 02:00 to 01:30: the clock leaves the window
				// backwards, then enters it again at 01:45.
				excl("2026-04-05T01:50:00+11:00", "2026-04-05T01:30:00+10:30"),
				free("2026-04-05T01:30:00+10:30"),
				excl("2026-04-05T01:45:00+10:30", "2026-04-05T02:15:00+10:30"),
				// Spring forward at 02:00 to 02:30: past the window's end.
				excl("2026-10-04T01:50:00+10:30", "2026-10-04T02:30:00+11:00"),
			}},
		{name: "daily window, inverted: business hours only, New York",
			cal: dailyWindow("closed", "America/New_York", "09:00", "17:00", true),
			points: []point{
				excl("2026-03-06T18:00:00-05:00", "2026-03-07T09:00:00-05:00"),
				excl("2026-03-07T18:00:00-05:00", "2026-03-08T09:00:00-04:00"),
				excl("2026-03-08T08:59:59-04:00", "2026-03-08T09:00:00-04:00"),
				free("2026-03-09T12:00:00-04:00"),
				free("2026-03-09T09:00:00-04:00"),
				excl("2026-03-09T17:00:00-04:00", "2026-03-10T09:00:00-04:00"),
			}},
		{name: "daily window to the end of the day",
			cal: dailyWindow("evening", "", "22:00", "24:00", false),
			points: []point{
				excl("2026-01-01T23:59:59Z", "2026-01-02T00:00:00Z"),
				excl("2026-01-01T22:00:00Z", "2026-01-02T00:00:00Z"),
				free("2026-01-01T21:59:59Z"),
			}},
		{name: "daily window of the whole day",
			cal:    dailyWindow("all", "", "00:00", "24:00", false),
			points: []point{excl("2026-01-01T12:00:00Z", "none")}},
		{name: "daily window of the whole day, inverted, excludes nothing",
			cal:    dailyWindow("none", "", "00:00", "24:00", true),
			points: []point{free("2026-01-01T12:00:00Z"), free("2026-01-01T00:00:00Z")}},
		{name: "cron hours 0-7, Berlin, whole hours",
			cal: cronExpr("early", "Europe/Berlin", "* * 0-7 ? * *"),
			points: []point{
				free("2026-03-28T23:00:00+01:00"),
				excl("2026-03-29T00:30:00+01:00", "2026-03-29T08:00:00+02:00"),
				excl("2026-10-25T00:00:00+02:00", "2026-10-25T08:00:00+01:00"),
				excl("2026-10-25T07:59:59.5+01:00", "2026-10-25T08:00:00+01:00"),
				free("2026-10-25T08:00:00+01:00"),
			}},
		{name: "cron minutes 0-29 every hour",
			cal: cronExpr("half", "", "* 0-29 * ? * *"),
			points: []point{
				excl("2026-01-01T10:10:10Z", "2026-01-01T10:30:00Z"),
				free("2026-01-01T10:30:00Z"),
				free("2026-01-01T10:59:59Z"),
			}},
		{name: "cron seconds",
			cal: cronExpr("seconds", "", "0-29 * * ? * *"),
			points: []point{
				excl("2026-01-01T10:10:10.5Z", "2026-01-01T10:10:30Z"),
				free("2026-01-01T10:10:30Z"),
				free("2026-01-01T10:10:59.999Z"),
				excl("2026-01-01T10:11:29.999Z", "2026-01-01T10:11:30Z"),
			}},
		{name: "cron whole days",
			cal: cronExpr("weekend", "", "* * * ? * SAT,SUN"),
			points: []point{
				excl("2026-01-03T10:00:00Z", "2026-01-05T00:00:00Z"),
				free("2026-01-05T00:00:00Z"),
				free("2026-01-02T23:59:59Z"),
			}},
		{name: "cron hour 2, Lord Howe: half-hour gap, and the repeated 01:30-02:00",
			cal: cronExpr("two", "Australia/Lord_Howe", "* * 2 ? * *"),
			points: []point{
				free("2026-10-04T01:59:59+10:30"),
				excl("2026-10-04T02:30:00+11:00", "2026-10-04T03:00:00+11:00"),
				excl("2026-04-05T02:10:00+10:30", "2026-04-05T03:00:00+10:30"),
			}},
		{name: "cron hour 1, Lord Howe: 90 minutes on the fall-back day",
			cal: cronExpr("one", "Australia/Lord_Howe", "* * 1 ? * *"),
			points: []point{
				excl("2026-04-05T01:00:00+11:00", "2026-04-05T02:00:00+10:30"),
				excl("2026-04-05T01:40:00+10:30", "2026-04-05T02:00:00+10:30"),
			}},
		// Past 2037 offsets come from the zone's yearly rule, and the last
		// day of a leap year is where the time package's zone bounds go
		// wrong (they end before the instant asked about).
		{name: "the last day of a leap year past the zone table",
			cal: annualDays("new-years-eve", "Europe/Berlin", [2]int32{12, 31}),
			points: []point{
				excl("2040-12-31T12:00:00+01:00", "2041-01-01T00:00:00+01:00"),
				excl("2040-12-31T00:00:00+01:00", "2041-01-01T00:00:00+01:00"),
			}},
		{name: "a window on the last day of a leap year past the zone table",
			cal: dailyWindow("night", "Australia/Lord_Howe", "01:00", "23:00", false),
			points: []point{
				excl("2048-12-31T10:00:00+11:00", "2048-12-31T23:00:00+11:00"),
			}},
		{name: "cron on the last day of a leap year past the zone table",
			cal: cronExpr("early", "America/New_York", "* * 0-20 ? * *"),
			points: []point{
				excl("2052-12-31T10:00:00-05:00", "2052-12-31T21:00:00-05:00"),
			}},
		{name: "weekly weekend based on holidays",
			cal: withBase(weeklyDays("weekend", "Europe/Berlin", "SAT", "SUN"), "holidays"),
			stored: []*taskdv1.Calendar{datesCal("holidays", "Europe/Berlin",
				[3]int32{2026, 12, 24}, [3]int32{2026, 12, 25}, [3]int32{2026, 12, 26}, [3]int32{2026, 12, 28})},
			points: []point{
				// Thu-Fri holidays, Sat holiday and weekend, Sun weekend,
				// Mon holiday: free on Tuesday.
				excl("2026-12-24T08:00:00+01:00", "2026-12-29T00:00:00+01:00"),
				excl("2026-12-27T08:00:00+01:00", "2026-12-29T00:00:00+01:00"),
				free("2026-12-23T12:00:00+01:00"),
				excl("2027-01-02T12:00:00+01:00", "2027-01-04T00:00:00+01:00"),
			}},
		{name: "a base is read in its own zone",
			cal:    withBase(weeklyDays("weekend-ny", "America/New_York", "SAT", "SUN"), "holidays-berlin"),
			stored: []*taskdv1.Calendar{datesCal("holidays-berlin", "Europe/Berlin", [3]int32{2026, 12, 28})},
			points: []point{
				// Monday starts in New York at 05:00Z, but Berlin's holiday
				// lasts until 23:00Z.
				excl("2026-12-27T12:00:00-05:00", "2026-12-28T18:00:00-05:00"),
				// Friday evening in New York is Saturday in Berlin: no holiday.
				free("2026-12-25T18:00:00-05:00"),
				excl("2026-12-28T17:59:59-05:00", "2026-12-28T18:00:00-05:00"),
			}},
		{name: "three deep: evening window on weekend on holidays",
			cal: withBase(dailyWindow("evenings", "Europe/Berlin", "18:00", "24:00", false), "weekend"),
			stored: []*taskdv1.Calendar{
				withBase(weeklyDays("weekend", "Europe/Berlin", "SAT", "SUN"), "holidays"),
				datesCal("holidays", "Europe/Berlin", [3]int32{2026, 12, 28}),
			},
			points: []point{
				excl("2026-12-24T19:00:00+01:00", "2026-12-25T00:00:00+01:00"),
				excl("2026-12-25T18:00:00+01:00", "2026-12-29T00:00:00+01:00"),
				free("2026-12-29T17:59:59+01:00"),
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkPoints(t, mustCompile(t, tc.cal, tc.stored...), tc.points)
		})
	}
}

func TestSet(t *testing.T) {
	holidays := datesCal("holidays", "Europe/Berlin", [3]int32{2026, 12, 28})
	weekend := mustCompile(t, withBase(weeklyDays("weekend", "Europe/Berlin", "SAT", "SUN"), "holidays"), holidays)
	nights := mustCompile(t, dailyWindow("nights", "America/New_York", "09:00", "17:00", true))
	cases := []struct {
		name string
		set  Set
		t    string
		excl bool
		next string // "" for none
	}{
		{"empty set", nil, "2026-12-26T12:00:00Z", false, "2026-12-26T12:00:00Z"},
		{"one member", Set{weekend}, "2026-12-26T12:00:00Z", true, "2026-12-28T23:00:00Z"},
		// The weekend and the Berlin holiday end at 23:00Z on Monday,
		// 18:00 in New York, after business hours: Tuesday 09:00 there.
		{"weekend and New York hours", Set{weekend, nights}, "2026-12-26T12:00:00Z", true, "2026-12-29T14:00:00Z"},
		{"order does not matter", Set{nights, weekend}, "2026-12-26T12:00:00Z", true, "2026-12-29T14:00:00Z"},
		{"free in both", Set{weekend, nights}, "2026-12-29T15:00:00Z", false, "2026-12-29T15:00:00Z"},
		{"halves of the day exclude everything", Set{
			mustCompile(t, dailyWindow("am", "", "00:00", "12:00", false)),
			mustCompile(t, dailyWindow("pm", "", "12:00", "24:00", false)),
		}, "2026-01-01T00:00:00Z", true, ""},
		// Between them these exclude every second of January to June,
		// each leaving gaps of 30 seconds: the walk steps through each
		// gap. A day and a half of that is within NextIncluded's work
		// bound...
		{"second halves for a day and a half", Set{
			mustCompile(t, cronExpr("first-half", "", "0-29 * * ? * *")),
			mustCompile(t, cronExpr("second-half-to-june", "", "30-59 * * ? 1-6 *")),
		}, "2026-06-29T12:00:00Z", true, "2026-07-01T00:00:30Z"},
		// ... half a year of it is not: NextIncluded gives up.
		{"second halves for half a year", Set{
			mustCompile(t, cronExpr("first-half", "", "0-29 * * ? * *")),
			mustCompile(t, cronExpr("second-half-to-june", "", "30-59 * * ? 1-6 *")),
		}, "2026-01-01T00:00:00Z", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ti := at(tc.t)
			if got := tc.set.Excludes(ti); got != tc.excl {
				t.Errorf("Excludes = %v, want %v", got, tc.excl)
			}
			got, ok := tc.set.NextIncluded(ti)
			if tc.next == "" {
				if ok {
					t.Errorf("NextIncluded = %s, want none", got)
				}
				return
			}
			if want := at(tc.next); !ok || !got.Equal(want) {
				t.Errorf("NextIncluded = %s, %v; want %s", got.UTC(), ok, want.UTC())
			}
		})
	}
}

func TestNextIncludedKeepsTheCallersZone(t *testing.T) {
	c := mustCompile(t, weeklyDays("weekend", "Europe/Berlin", "SAT", "SUN"))
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	got, ok := c.NextIncluded(at("2026-01-03T12:00:00Z").In(ny))
	if !ok || got.Location() != ny || !got.Equal(at("2026-01-05T00:00:00+01:00")) {
		t.Fatalf("NextIncluded = %s, %v; want Monday 00:00 in Berlin, in New York's zone", got, ok)
	}
}

func TestCompileChains(t *testing.T) {
	long := func(n int) (first *taskdv1.Calendar, stored []*taskdv1.Calendar) {
		for i := n - 1; i >= 0; i-- {
			c := weeklyDays("c"+string(rune('a'+i)), "", "SUN")
			if i < n-1 {
				c.Base = "c" + string(rune('a'+i+1))
			}
			stored = append(stored, c)
		}
		return stored[len(stored)-1], stored
	}
	first16, stored16 := long(MaxChain)
	first17, stored17 := long(MaxChain + 1)
	cases := []struct {
		name    string
		cal     *taskdv1.Calendar
		stored  []*taskdv1.Calendar
		field   string // "" for success
		contain string
	}{
		{"missing base", withBase(weeklyDays("a", "", "SUN"), "nope"), nil, "calendar.base", `calendar "nope" does not exist`},
		{"missing base further down", withBase(weeklyDays("a", "", "SUN"), "b"),
			[]*taskdv1.Calendar{withBase(weeklyDays("b", "", "MON"), "gone")},
			"calendar.base", `calendar "gone" (base of "b") does not exist`},
		{"cycle of two", withBase(weeklyDays("a", "", "SUN"), "b"),
			[]*taskdv1.Calendar{withBase(weeklyDays("b", "", "MON"), "a")},
			"calendar.base", "a → b → a"},
		{"cycle not through the new calendar", withBase(weeklyDays("a", "", "SUN"), "b"),
			[]*taskdv1.Calendar{withBase(weeklyDays("b", "", "MON"), "c"), withBase(weeklyDays("c", "", "TUE"), "b")},
			"calendar.base", "a → b → c → b"},
		{"replacing a calendar checks the new version", withBase(weeklyDays("b", "", "SUN"), "a"),
			[]*taskdv1.Calendar{withBase(weeklyDays("a", "", "SUN"), "b"), weeklyDays("b", "", "SUN")},
			"calendar.base", "b → a → b"},
		{"itself as base", withBase(weeklyDays("a", "", "SUN"), "a"), nil, "calendar.base", "itself"},
		{"invalid stored base", withBase(weeklyDays("a", "", "SUN"), "b"),
			[]*taskdv1.Calendar{weeklyDays("b", "", "SUNDAY")}, "calendar.base", `"b"`},
		{"invalid calendar itself", weeklyDays("a", "", "FUN"), nil, "calendar.weekly.days[0]", "FUN"},
		{"16 in a chain", first16, stored16, "", ""},
		{"17 in a chain", first17, stored17, "calendar.base", "longer than 16"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compile(tc.cal, store(tc.stored...))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				if len(c.rules) != MaxChain {
					t.Fatalf("compiled %d rules, want %d", len(c.rules), MaxChain)
				}
				return
			}
			fe, ok := err.(*FieldError)
			if !ok {
				t.Fatalf("Compile error = %v (%T), want a *FieldError", err, err)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Reason, tc.contain) {
				t.Fatalf("Compile error = %v; want field %s with %q", err, tc.field, tc.contain)
			}
		})
	}
}

func TestCompileNilLookupMeansNoneStored(t *testing.T) {
	if _, err := Compile(weeklyDays("a", "", "SUN"), nil); err != nil {
		t.Fatalf("no base, no lookup: %v", err)
	}
	if _, err := Compile(withBase(weeklyDays("a", "", "SUN"), "b"), nil); err == nil {
		t.Fatal("a base with no lookup compiled")
	}
}

func TestUsesAndName(t *testing.T) {
	if got := Uses(weeklyDays("a", "", "SUN")); got != nil {
		t.Errorf("Uses without base = %v", got)
	}
	if got := Uses(withBase(weeklyDays("a", "", "SUN"), "hol")); len(got) != 1 || got[0] != "hol" {
		t.Errorf("Uses = %v, want [hol]", got)
	}
	if got := mustCompile(t, weeklyDays("a.b-c_d", "", "SUN")).Name(); got != "a.b-c_d" {
		t.Errorf("Name = %q", got)
	}
}

// TestConcurrentUse runs one compiled set from several goroutines; the race
// detector checks that nothing is written.
func TestConcurrentUse(t *testing.T) {
	holidays := datesCal("holidays", "Europe/Berlin", [3]int32{2026, 12, 28})
	set := Set{
		mustCompile(t, withBase(weeklyDays("weekend", "Europe/Berlin", "SAT", "SUN"), "holidays"), holidays),
		mustCompile(t, cronExpr("early", "America/New_York", "* * 0-7 ? * *")),
	}
	want, _ := set.NextIncluded(at("2026-12-26T12:00:00Z"))
	var wg sync.WaitGroup
	results := make([]time.Time, 4)
	for i := range results {
		wg.Go(func() {
			for range 100 {
				results[i], _ = set.NextIncluded(at("2026-12-26T12:00:00Z"))
			}
		})
	}
	wg.Wait()
	for i, got := range results {
		if !got.Equal(want) {
			t.Errorf("goroutine %d got %s, want %s", i, got, want)
		}
	}
}

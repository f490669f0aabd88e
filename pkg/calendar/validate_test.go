package calendar

import (
	"errors"
	"strings"
	"testing"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func TestValidate(t *testing.T) {
	many := func(n int) [][3]int32 {
		out := make([][3]int32, n)
		for i := range out {
			out[i] = [3]int32{2026, 1, 1}
		}
		return out
	}
	named := func(c *taskdv1.Calendar, f func(*taskdv1.Calendar)) *taskdv1.Calendar {
		f(c)
		return c
	}
	cases := []struct {
		name  string
		cal   *taskdv1.Calendar
		field string // "" when valid
		msg   string // part of the error text
	}{
		// Valid calendars of each kind.
		{"dates", datesCal("hol", "Europe/Berlin", [3]int32{2026, 12, 25}, [3]int32{2028, 2, 29}), "", ""},
		{"dates, none listed", datesCal("hol", ""), "", ""},
		{"dates, 1000", datesCal("hol", "", many(MaxEntries)...), "", ""},
		{"annual with 29 February", annualDays("a", "", [2]int32{2, 29}, [2]int32{12, 31}), "", ""},
		{"monthly", monthlyDays("m", "", 1, 31, -1), "", ""},
		{"weekly", weeklyDays("w", "", "MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"), "", ""},
		{"daily HH:MM", dailyWindow("d", "", "09:00", "17:30", false), "", ""},
		{"daily HH:MM:SS to 24:00", dailyWindow("d", "", "00:00:01", "24:00:00", true), "", ""},
		{"cron", cronExpr("c", "America/New_York", "* * 0-7 ? * *"), "", ""},
		{"longest name", weeklyDays(strings.Repeat("n", MaxNameLen), "", "SUN"), "", ""},
		{"description at the limit", named(weeklyDays("w", "", "SUN"), func(c *taskdv1.Calendar) {
			c.Description = strings.Repeat("x", MaxDescriptionLen)
		}), "", ""},
		{"base", withBase(weeklyDays("w", "", "SUN"), "holidays"), "", ""},
		{"UTC by name", weeklyDays("w", "UTC", "SUN"), "", ""},

		{"nil", nil, "calendar", "is required"},
		{"no name", weeklyDays("", "", "SUN"), "calendar.name", "must not be empty"},
		{"name too long", weeklyDays(strings.Repeat("n", MaxNameLen+1), "", "SUN"), "calendar.name", "129 bytes"},
		{"name with a space", weeklyDays("my cal", "", "SUN"), "calendar.name", "character"},
		{"name with a slash", weeklyDays("a/b", "", "SUN"), "calendar.name", "character"},
		{"name not ASCII", weeklyDays("feiertäge", "", "SUN"), "calendar.name", "character"},
		{"description too long", named(weeklyDays("w", "", "SUN"), func(c *taskdv1.Calendar) {
			c.Description = strings.Repeat("x", MaxDescriptionLen+1)
		}), "calendar.description", "1025 bytes"},
		{"unknown zone", weeklyDays("w", "Mars/Olympus_Mons", "SUN"), "calendar.time_zone", "Mars/Olympus_Mons"},
		{"Local zone", weeklyDays("w", "Local", "SUN"), "calendar.time_zone", "Local"},
		{"base is itself", withBase(weeklyDays("w", "", "SUN"), "w"), "calendar.base", "itself"},
		{"base not a name", withBase(weeklyDays("w", "", "SUN"), "a b"), "calendar.base", "character"},
		{"no kind", &taskdv1.Calendar{Name: "x"}, "calendar", "no calendar kind"},

		{"dates: 30 February", datesCal("h", "", [3]int32{2026, 1, 1}, [3]int32{2026, 3, 1}, [3]int32{2026, 2, 30}),
			"calendar.dates.dates[2].day", "February 2026 has 28 days"},
		{"dates: 29 February of a common year", datesCal("h", "", [3]int32{2027, 2, 29}), "calendar.dates.dates[0].day", "28"},
		{"dates: 31 April", datesCal("h", "", [3]int32{2026, 4, 31}), "calendar.dates.dates[0].day", "30 days"},
		{"dates: day 0", datesCal("h", "", [3]int32{2026, 4, 0}), "calendar.dates.dates[0].day", "is 0"},
		{"dates: month 13", datesCal("h", "", [3]int32{2026, 12, 1}, [3]int32{2026, 13, 1}), "calendar.dates.dates[1].month", "1 to 12"},
		{"dates: month 0", datesCal("h", "", [3]int32{2026, 0, 1}), "calendar.dates.dates[0].month", "1 to 12"},
		{"dates: year 0", datesCal("h", "", [3]int32{0, 1, 1}), "calendar.dates.dates[0].year", "1 to 9999"},
		{"dates: 1001", datesCal("h", "", many(MaxEntries+1)...), "calendar.dates.dates", "1001 entries"},
		{"dates: nil entry", &taskdv1.Calendar{Name: "h", Kind: &taskdv1.Calendar_Dates{
			Dates: &taskdv1.DatesCalendar{Dates: []*taskdv1.Date{nil}}}}, "calendar.dates.dates[0].year", "is 0"},

		{"annual: a year", annualDays("a", "", [2]int32{1, 1}, [2]int32{12, 25}), "", ""},
		{"annual: year set", &taskdv1.Calendar{Name: "a", Kind: &taskdv1.Calendar_Annual{Annual: &taskdv1.AnnualCalendar{
			Days: []*taskdv1.Date{{Month: 1, Day: 1}, {Year: 2026, Month: 12, Day: 25}}}}},
			"calendar.annual.days[1].year", "must be 0"},
		{"annual: 30 February", annualDays("a", "", [2]int32{2, 30}), "calendar.annual.days[0].day", "29 days at most"},
		{"annual: 31 June", annualDays("a", "", [2]int32{6, 31}), "calendar.annual.days[0].day", "30 days"},
		{"annual: month 13", annualDays("a", "", [2]int32{13, 1}), "calendar.annual.days[0].month", "1 to 12"},

		{"monthly: 0", monthlyDays("m", "", 1, 0), "calendar.monthly.days[1]", "1 to 31, or -1"},
		{"monthly: 32", monthlyDays("m", "", 32), "calendar.monthly.days[0]", "is 32"},
		{"monthly: -2", monthlyDays("m", "", -2), "calendar.monthly.days[0]", "is -2"},
		{"monthly: 1001", monthlyDays("m", "", make([]int32, MaxEntries+1)...), "calendar.monthly.days", "limit is 1000"},

		{"weekly: lower case", weeklyDays("w", "", "sat"), "calendar.weekly.days[0]", "MON TUE"},
		{"weekly: full name", weeklyDays("w", "", "SAT", "MONDAY"), "calendar.weekly.days[1]", `"MONDAY"`},
		{"weekly: twice", weeklyDays("w", "", "SAT", "SUN", "SAT"), "calendar.weekly.days[2]", "SAT is listed twice"},

		{"daily: H:MM", dailyWindow("d", "", "9:00", "17:00", false), "calendar.daily.start", "must be HH:MM or HH:MM:SS"},
		{"daily: empty start", dailyWindow("d", "", "", "17:00", false), "calendar.daily.start", "HH:MM"},
		{"daily: start 24:00", dailyWindow("d", "", "24:00", "24:00", false), "calendar.daily.start", "before 24:00"},
		{"daily: minute 60", dailyWindow("d", "", "09:60", "17:00", false), "calendar.daily.start", "HH:MM"},
		{"daily: second 60", dailyWindow("d", "", "09:00:60", "17:00", false), "calendar.daily.start", "HH:MM"},
		{"daily: hour 25", dailyWindow("d", "", "09:00", "25:00", false), "calendar.daily.end", "HH:MM"},
		{"daily: 24:01", dailyWindow("d", "", "09:00", "24:01", false), "calendar.daily.end", "HH:MM"},
		{"daily: dot", dailyWindow("d", "", "09.00", "17:00", false), "calendar.daily.start", "HH:MM"},
		{"daily: end before start", dailyWindow("d", "", "17:00", "09:00", false), "calendar.daily.end", "after start"},
		{"daily: empty window", dailyWindow("d", "", "09:00", "09:00:00", true), "calendar.daily.end", "after start"},

		{"cron: too few fields", cronExpr("c", "", "* * *"), "calendar.cron.expression", ""},
		{"cron: out of range", cronExpr("c", "", "* * 25 ? * *"), "calendar.cron.expression", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate("calendar", tc.cal)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %v (%T), want a *FieldError on %s", err, err, tc.field)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Reason, tc.msg) {
				t.Fatalf("Validate = %q; want field %s, reason containing %q", err, tc.field, tc.msg)
			}
			if fe.Error() != fe.Field+": "+fe.Reason {
				t.Fatalf("Error() = %q", fe.Error())
			}
		})
	}
}

func TestValidateFieldPrefixAndMessage(t *testing.T) {
	err := Validate("request.calendars[3]", dailyWindow("d", "", "9:00", "17:00", false))
	if err == nil || err.Error() != "request.calendars[3].daily.start: must be HH:MM or HH:MM:SS" {
		t.Fatalf("Validate = %v", err)
	}
}

func TestValidateDoesNotLookAtBases(t *testing.T) {
	// A base that does not exist is Compile's business, not Validate's.
	if err := Validate("calendar", withBase(weeklyDays("w", "", "SUN"), "not-stored")); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func TestParseClock(t *testing.T) {
	cases := []struct {
		in   string
		secs int
		ok   bool
	}{
		{"00:00", 0, true},
		{"23:59:59", 86399, true},
		{"24:00", 86400, true},
		{"24:00:00", 86400, true},
		{"12:34", 12*3600 + 34*60, true},
		{"24:00:01", 0, false},
		{"1:00", 0, false},
		{"01:00:0", 0, false},
		{"01-00", 0, false},
		{"0a:00", 0, false},
		{"01:00:00:00", 0, false},
		{"+1:00", 0, false},
	}
	for _, tc := range cases {
		d, ok := parseClock(tc.in)
		if ok != tc.ok || ok && int(d.Seconds()) != tc.secs {
			t.Errorf("parseClock(%q) = %v, %v; want %ds, %v", tc.in, d, ok, tc.secs, tc.ok)
		}
	}
}

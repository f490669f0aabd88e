package calendar

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

var zones = []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Havana",
	"America/Santiago", "Asia/Kathmandu", "Pacific/Chatham", ""}

// transitions are days on which the zones above change offset, to draw
// instants near them more often than by chance.
var transitions = []string{
	"2026-03-29T01:00:00Z", "2026-10-25T01:00:00Z", // Berlin
	"2026-03-08T07:00:00Z", "2026-11-01T06:00:00Z", // New York
	"2026-04-04T15:00:00Z", "2026-10-03T15:30:00Z", // Lord Howe
	"2026-03-08T05:00:00Z", "2026-11-01T05:00:00Z", // Havana
	"2026-04-05T03:00:00Z", "2026-09-06T04:00:00Z", // Santiago
	"2026-04-04T14:00:00Z", "2026-09-26T14:00:00Z", // Chatham
	"2040-12-31T00:00:00Z", "2048-12-31T00:00:00Z", // past the zone tables, in leap years
}

// randomInstant draws an instant in 2026-2031, half the time within two
// days of an offset change.
func randomInstant(rng *rand.Rand) time.Time {
	if rng.IntN(2) == 0 {
		base := at(transitions[rng.IntN(len(transitions))])
		return base.Add(time.Duration(rng.Int64N(int64(4*day))) - 2*day)
	}
	from := at("2026-01-01T00:00:00Z")
	t := from.Add(time.Duration(rng.Int64N(int64(5 * 365 * day))))
	if rng.IntN(3) == 0 {
		t = t.Truncate(time.Minute) // boundaries are on whole minutes and seconds
	}
	return t
}

// TestExcludesAgreesWithTheTimePackage checks the wall-clock reading the
// package does by itself against the time package's own Date and Clock,
// for the day and window kinds, in zones with odd offsets and transitions.
func TestExcludesAgreesWithTheTimePackage(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, zone := range zones {
		loc, err := loadZone(zone)
		if err != nil {
			t.Fatal(err)
		}
		date := func(u time.Time) (int, time.Month, int) { return u.In(loc).Date() }
		tod := func(u time.Time) time.Duration {
			h, m, s := u.In(loc).Clock()
			return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute +
				time.Duration(s)*time.Second + time.Duration(u.Nanosecond())
		}
		var listed [][3]int32
		for range 200 {
			y, m, d := date(randomInstant(rng))
			listed = append(listed, [3]int32{int32(y), int32(m), int32(d)})
		}
		cases := []struct {
			cal    *taskdv1.Calendar
			oracle func(time.Time) bool
		}{
			{weeklyDays("weekly", zone, "SAT", "SUN", "WED"), func(u time.Time) bool {
				wd := u.In(loc).Weekday()
				return wd == time.Saturday || wd == time.Sunday || wd == time.Wednesday
			}},
			{monthlyDays("monthly", zone, 1, 15, 31, -1), func(u time.Time) bool {
				y, m, d := date(u)
				return d == 1 || d == 15 || d == 31 || time.Date(y, m, d+1, 12, 0, 0, 0, time.UTC).Day() == 1
			}},
			{annualDays("annual", zone, [2]int32{2, 29}, [2]int32{3, 29}, [2]int32{12, 31}), func(u time.Time) bool {
				_, m, d := date(u)
				return m == 2 && d == 29 || m == 3 && d == 29 || m == 12 && d == 31
			}},
			{datesCal("dates", zone, listed...), func(u time.Time) bool {
				y, m, d := date(u)
				return slices.Contains(listed, [3]int32{int32(y), int32(m), int32(d)})
			}},
			{dailyWindow("window", zone, "01:45", "02:15:30", false), func(u time.Time) bool {
				return tod(u) >= time.Hour+45*time.Minute && tod(u) < 2*time.Hour+15*time.Minute+30*time.Second
			}},
			{dailyWindow("outside", zone, "08:00", "23:30", true), func(u time.Time) bool {
				return tod(u) < 8*time.Hour || tod(u) >= 23*time.Hour+30*time.Minute
			}},
		}
		for _, tc := range cases {
			c := mustCompile(t, tc.cal)
			for range 1000 {
				u := randomInstant(rng)
				if got, want := c.Excludes(u), tc.oracle(u); got != want {
					t.Fatalf("%s in %q: Excludes(%s) = %v, the time package says %v", c.Name(), zone, u.In(loc), got, want)
				}
			}
		}
	}
}

// pool is calendars of every kind, in several zones, alone and chained;
// no combination of them excludes all time for long.
func pool(tb testing.TB) []*Calendar {
	holidays := datesCal("holidays", "Europe/Berlin", [3]int32{2026, 12, 24}, [3]int32{2026, 12, 25},
		[3]int32{2026, 12, 26}, [3]int32{2027, 1, 1}, [3]int32{2026, 10, 25}, [3]int32{2026, 3, 30})
	weekend := withBase(weeklyDays("weekend", "Europe/Berlin", "SAT", "SUN"), "holidays")
	return []*Calendar{
		mustCompile(tb, weekend, holidays),
		mustCompile(tb, withBase(dailyWindow("evenings", "Europe/Berlin", "18:00", "24:00", false), "weekend"), weekend, holidays),
		mustCompile(tb, weeklyDays("sundays", "America/New_York", "SUN")),
		mustCompile(tb, dailyWindow("office", "America/New_York", "09:00", "17:00", true)),
		mustCompile(tb, dailyWindow("night", "Australia/Lord_Howe", "01:45", "02:15", false)),
		mustCompile(tb, monthlyDays("month-end", "Asia/Kathmandu", -1, 1)),
		mustCompile(tb, annualDays("xmas", "Pacific/Chatham", [2]int32{12, 24}, [2]int32{12, 25}, [2]int32{2, 29})),
		mustCompile(tb, weeklyDays("saturdays", "America/Santiago", "SAT")),
		mustCompile(tb, weeklyDays("sundays-havana", "America/Havana", "SUN")),
		mustCompile(tb, cronExpr("early", "Europe/Berlin", "* * 0-7 ? * *")),
		mustCompile(tb, cronExpr("half-hours", "", "* 0-29 * ? * *")),
		mustCompile(tb, cronExpr("half-minutes", "Australia/Lord_Howe", "0-29 * * ? * *")),
		mustCompile(tb, cronExpr("hour-two", "Australia/Lord_Howe", "* * 1-2 ? * *")),
	}
}

// TestNextIncludedProperty: for random sets and instants, NextIncluded(t)
// is not excluded, the instant just before it is (so no smaller one is
// free), and every minute of the bounded windows at both ends of
// [t, NextIncluded(t)) is excluded.
func TestNextIncludedProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	cals := pool(t)
	const window, samples = 12 * time.Hour, 2000
	var excluded, steps int
	for range samples {
		var set Set
		for range 1 + rng.IntN(3) {
			set = append(set, cals[rng.IntN(len(cals))])
		}
		names := make([]string, len(set))
		for i, c := range set {
			names[i] = c.Name()
		}
		from := randomInstant(rng)
		got, ok := set.NextIncluded(from)
		if !ok {
			t.Fatalf("%v: NextIncluded(%s) found nothing", names, from)
		}
		switch {
		case got.Before(from):
			t.Fatalf("%v: NextIncluded(%s) = %s, before it", names, from, got)
		case set.Excludes(got):
			t.Fatalf("%v: NextIncluded(%s) = %s, which is excluded", names, from, got)
		case !set.Excludes(from):
			if !got.Equal(from) {
				t.Fatalf("%v: %s is free but NextIncluded = %s", names, from, got)
			}
			continue
		case !set.Excludes(got.Add(-time.Nanosecond)):
			t.Fatalf("%v: NextIncluded(%s) = %s, but the instant before it is free", names, from, got)
		}
		excluded++
		for u := from; u.Before(got) && u.Sub(from) < window; u = u.Add(time.Minute) {
			steps++
			if !set.Excludes(u) {
				t.Fatalf("%v: NextIncluded(%s) = %s, but %s before it is free", names, from, got, u)
			}
		}
		for u := got.Add(-time.Minute); !u.Before(from) && got.Sub(u) < window; u = u.Add(-time.Minute) {
			if !set.Excludes(u) {
				t.Fatalf("%v: NextIncluded(%s) = %s, but %s before it is free", names, from, got, u)
			}
		}
	}
	// The draw must exercise jumps, not only free instants.
	if excluded < samples/4 || steps < 100000 {
		t.Fatalf("only %d of %d instants were excluded, %d minutes stepped: the draw tests too little", excluded, samples, steps)
	}
	t.Logf("%d of %d instants excluded, %d minutes stepped", excluded, samples, steps)
}

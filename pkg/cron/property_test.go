package cron

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Zones for the property tests: the three of the daylight-saving rules,
// and zones with unusual changes (Apia skipped a whole day in 2011, Troll
// moves by two hours, St Johns and Kathmandu have odd offsets, Casablanca
// changes several times a year, Dublin's winter time is the "negative"
// one in the zone data).
var propertyZones = []string{
	"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
	"Pacific/Apia", "Antarctica/Troll", "America/St_Johns", "Asia/Kathmandu",
	"Africa/Casablanca", "Europe/Dublin", "America/Santiago",
}

// randomExpr builds a valid expression. When aim is set, it is the wall
// time the test starts from, and the hours and days usually select it (or
// the hour next to it), so that fire times fall inside the test's window
// and meet the repeated and skipped wall times of a nearby offset change.
func randomExpr(r *rand.Rand, aim *wall) string {
	timeField := func(max int, dense bool) string {
		if dense && r.IntN(2) == 0 {
			return []string{"*", fmt.Sprintf("*/%d", 1+r.IntN(max/3)), fmt.Sprintf("%d/%d", r.IntN(max+1), 1+r.IntN(max/2))}[r.IntN(3)]
		}
		a, b := r.IntN(max+1), r.IntN(max+1)
		switch r.IntN(6) {
		case 0:
			return "*"
		case 1:
			return fmt.Sprint(a)
		case 2:
			return fmt.Sprintf("%d-%d", a, b) // may wrap
		case 3:
			return fmt.Sprintf("%d,%d,%d", a, b, r.IntN(max+1))
		case 4:
			return fmt.Sprintf("%d-%d/%d", a, b, 1+r.IntN(max/2))
		}
		return fmt.Sprintf("*/%d", 1+r.IntN(max))
	}
	// Seconds and minutes are often sparse within the hour, and hours
	// often * or a step: then which occurrence of a repeated wall time
	// fires, and where a skipped one goes, decide the next fire time.
	sec := timeField(59, r.IntN(3) == 0)
	min := timeField(59, r.IntN(3) == 0)
	hour := timeField(23, r.IntN(3) > 0)
	var dom, dow string
	if r.IntN(2) == 0 {
		dow = "?"
		dom = []string{
			"*", "*", fmt.Sprint(1 + r.IntN(31)), fmt.Sprintf("%d-%d", 1+r.IntN(31), 1+r.IntN(31)),
			"L", fmt.Sprintf("L-%d", r.IntN(31)), fmt.Sprintf("%dW", 1+r.IntN(31)), "LW",
			fmt.Sprintf("L-%dW", r.IntN(31)), fmt.Sprintf("1,L,%dW", 1+r.IntN(31)), fmt.Sprintf("*/%d", 1+r.IntN(10)),
		}[r.IntN(11)]
	} else {
		dom = "?"
		day := 1 + r.IntN(7)
		dow = []string{
			"*", fmt.Sprint(day), fmt.Sprintf("%d-%d", day, 1+r.IntN(7)), fmt.Sprintf("%dL", day),
			fmt.Sprintf("%d#%d", day, 1+r.IntN(5)), "MON-FRI", "SAT,SUN", "L", fmt.Sprintf("*/%d", 1+r.IntN(3)),
		}[r.IntN(9)]
	}
	month := "*"
	if r.IntN(4) == 0 {
		month = []string{"NOV-FEB", "3,10", "1/3", fmt.Sprint(1 + r.IntN(12))}[r.IntN(4)]
	}
	if aim != nil && r.IntN(4) > 0 {
		h := (aim.hour + r.IntN(3) + 23) % 24 // the hour before, of or after
		hour = []string{
			"*", "*/1", fmt.Sprint(h), fmt.Sprintf("%d,%d", h, (h+1)%24), fmt.Sprintf("%d-%d", h, (h+2)%24),
			fmt.Sprintf("%d/12", h%12), fmt.Sprintf("%d-%d/2", h, (h+3)%24),
		}[r.IntN(7)]
		dom, dow, month = []string{"*", fmt.Sprint(aim.day)}[r.IntN(2)], "?", "*"
	}
	fields := []string{sec, min, hour, dom, month, dow}
	if r.IntN(5) == 0 {
		fields = append(fields, []string{"*", "2000-2040", "2010/3"}[r.IntN(3)])
	}
	return strings.Join(fields, " ")
}

// randomInstant picks an instant near one of the zone's offset changes
// most of the time (within two hours of it, where the repeated and the
// skipped wall times are), else anywhere. Most instants are before 2037:
// after the last change listed in the zone data, the time package derives
// each offset from the zone's rule, which is several times slower.
func randomInstant(r *rand.Rand, loc *time.Location) time.Time {
	limit := int64(2100000000) // 2036
	if r.IntN(5) == 0 {
		limit = 4100000000 // 2099
	}
	base := time.Unix(r.Int64N(limit), r.Int64N(1e9))
	if r.IntN(10) < 8 {
		_, end := base.In(loc).ZoneBounds()
		if !end.IsZero() {
			return end.Add(time.Duration(r.Int64N(int64(4*time.Hour))) - 2*time.Hour)
		}
	}
	return base
}

// TestNextIsFirstMatch: for random expressions, zones and instants t, the
// fire times Next lists one after the other from t are exactly the whole
// seconds u > t, stepping one second at a time through a window, for which
// Matches(u) holds; so each Next is the first such u after the one before.
// Matches decides from the wall time directly, Next searches, so they
// check each other.
func TestNextIsFirstMatch(t *testing.T) {
	const cases = 1000
	const window = 45 * time.Minute
	r := rand.New(rand.NewPCG(1, 2))
	for i := range cases {
		zone := propertyZones[r.IntN(len(propertyZones))]
		loc := mustZone(t, zone)
		at := randomInstant(r, loc)
		_, off := at.In(loc).Zone()
		aim := wallOf(at.Unix() + int64(off))
		expr := randomExpr(r, &aim)
		e, err := Parse(expr, loc)
		if err != nil {
			t.Fatalf("case %d: Parse(%q): %v", i, expr, err)
		}
		end := at.Add(window)
		fires := map[int64]bool{}
		for prev := at; ; {
			next, ok := e.Next(prev)
			if !ok || next.After(end) {
				break
			}
			if !next.After(prev) || next.Nanosecond() != 0 {
				t.Fatalf("case %d: %q in %s: Next(%s) = %s, not a whole second after it", i, expr, zone, prev, next)
			}
			if again, ok := e.Next(next.Add(-time.Second)); !ok || !again.Equal(next) {
				t.Fatalf("case %d: %q in %s: Next(%s) = %s but Next of the second before it = %s, %v", i, expr, zone, prev, next, again, ok)
			}
			fires[next.Unix()] = true
			prev = next
		}
		for u := at.Truncate(time.Second).Add(time.Second); !u.After(end); u = u.Add(time.Second) {
			if got := e.Matches(u); got != fires[u.Unix()] {
				t.Fatalf("case %d: %q in %s from %s: Matches(%s) (%s local) = %v, Next lists it: %v",
					i, expr, zone, at, u, u.In(loc).Format("2006-01-02 15:04:05 MST"), got, fires[u.Unix()])
			}
		}
	}
}

// TestNextStrictlyIncreasing follows chains of fire times across the
// offset changes of every property zone.
func TestNextStrictlyIncreasing(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		expr := randomExpr(r, nil)
		zone := propertyZones[r.IntN(len(propertyZones))]
		e, err := Parse(expr, mustZone(t, zone))
		if err != nil {
			t.Fatalf("Parse(%q): %v", expr, err)
		}
		at := randomInstant(r, e.Location())
		for range 50 {
			next, ok := e.Next(at)
			if !ok {
				break
			}
			if !next.After(at) || !e.Matches(next) {
				t.Fatalf("case %d: %q in %s: Next(%s) = %s (after: %v, matches: %v)", i, expr, zone, at, next, next.After(at), e.Matches(next))
			}
			at = next
		}
	}
}

// TestDayMaskReference checks the days every day-of-month and day-of-week
// form selects, for every month of the supported years, against a direct
// reading of the rules with the time package's calendar.
func TestDayMaskReference(t *testing.T) {
	type rule struct {
		field string // the day-of-month or day-of-week field; the other is "?"
		picks func(y int, m time.Month, d int) bool
	}
	weekday := func(y int, m time.Month, d int) time.Weekday {
		return time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Weekday()
	}
	lastDay := func(y int, m time.Month) int {
		return time.Date(y, m+1, 0, 12, 0, 0, 0, time.UTC).Day()
	}
	// nearest finds the Monday-Friday day of the same month closest to b.
	nearest := func(y int, m time.Month, b int) int {
		for dist := 0; ; dist++ {
			for _, d := range []int{b - dist, b + dist} {
				if d >= 1 && d <= lastDay(y, m) && weekday(y, m, d) != time.Saturday && weekday(y, m, d) != time.Sunday {
					return d
				}
			}
		}
	}
	rules := []rule{
		{"15", func(y int, m time.Month, d int) bool { return d == 15 }},
		{"31", func(y int, m time.Month, d int) bool { return d == 31 }},
		{"L", func(y int, m time.Month, d int) bool { return d == lastDay(y, m) }},
		{"L-3", func(y int, m time.Month, d int) bool { return d == lastDay(y, m)-3 }},
		{"L-29", func(y int, m time.Month, d int) bool { return d == lastDay(y, m)-29 }},
		{"1W", func(y int, m time.Month, d int) bool { return d == nearest(y, m, 1) }},
		{"15W", func(y int, m time.Month, d int) bool { return d == nearest(y, m, 15) }},
		{"31W", func(y int, m time.Month, d int) bool { return lastDay(y, m) == 31 && d == nearest(y, m, 31) }},
		{"LW", func(y int, m time.Month, d int) bool { return d == nearest(y, m, lastDay(y, m)) }},
		{"L-2W", func(y int, m time.Month, d int) bool { return d == nearest(y, m, lastDay(y, m)-2) }},
		{"1,L,15W", func(y int, m time.Month, d int) bool {
			return d == 1 || d == lastDay(y, m) || d == nearest(y, m, 15)
		}},
		{"28-3", func(y int, m time.Month, d int) bool { return d >= 28 || d <= 3 }},
		{"*/10", func(y int, m time.Month, d int) bool { return d%10 == 1 }},
		{"?/MON-FRI", func(y int, m time.Month, d int) bool {
			w := weekday(y, m, d)
			return w != time.Saturday && w != time.Sunday
		}},
		{"?/L", func(y int, m time.Month, d int) bool { return weekday(y, m, d) == time.Saturday }},
		{"?/6L", func(y int, m time.Month, d int) bool {
			return weekday(y, m, d) == time.Friday && d+7 > lastDay(y, m)
		}},
		{"?/1L", func(y int, m time.Month, d int) bool {
			return weekday(y, m, d) == time.Sunday && d+7 > lastDay(y, m)
		}},
		{"?/2#1", func(y int, m time.Month, d int) bool { return weekday(y, m, d) == time.Monday && d <= 7 }},
		{"?/4#5", func(y int, m time.Month, d int) bool { return weekday(y, m, d) == time.Wednesday && d > 28 }},
		{"?/SAT#3", func(y int, m time.Month, d int) bool {
			return weekday(y, m, d) == time.Saturday && d > 14 && d <= 21
		}},
		{"?/7-2", func(y int, m time.Month, d int) bool {
			w := weekday(y, m, d)
			return w == time.Saturday || w == time.Sunday || w == time.Monday
		}},
		{"?/2/2", func(y int, m time.Month, d int) bool {
			w := weekday(y, m, d)
			return w == time.Monday || w == time.Wednesday || w == time.Friday
		}},
	}
	for _, rl := range rules {
		dom, dow := rl.field, "?"
		if rest, ok := strings.CutPrefix(rl.field, "?/"); ok {
			dom, dow = "?", rest
		}
		expr := fmt.Sprintf("0 0 0 %s * %s", dom, dow)
		e, err := Parse(expr, nil)
		if err != nil {
			t.Fatalf("Parse(%q): %v", expr, err)
		}
		for y := MinYear; y <= MaxYear; y++ {
			for m := time.January; m <= time.December; m++ {
				mask := e.dayMask(y, int(m))
				for d := 1; d <= 31; d++ {
					want := d <= lastDay(y, m) && rl.picks(y, m, d)
					if got := mask&(1<<d) != 0; got != want {
						t.Fatalf("%q: %d-%02d-%02d selected %v, want %v", expr, y, m, d, got, want)
					}
				}
			}
		}
	}
}

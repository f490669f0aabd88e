package cron

import (
	"testing"
	"time"
)

// The daylight-saving transitions of 2024 the tests cross:
//
//	Europe/Berlin        spring 2024-03-31 01:00Z: 02:00 CET  → 03:00 CEST (02:00-03:00 skipped)
//	                     fall   2024-10-27 01:00Z: 03:00 CEST → 02:00 CET  (02:00-03:00 repeated)
//	America/New_York     spring 2024-03-10 07:00Z: 02:00 EST  → 03:00 EDT  (02:00-03:00 skipped)
//	                     fall   2024-11-03 06:00Z: 02:00 EDT  → 01:00 EST  (01:00-02:00 repeated)
//	Australia/Lord_Howe  spring 2024-10-05 15:30Z: 02:00 +1030 → 02:30 +11 (02:00-02:30 skipped)
//	                     fall   2024-04-06 15:00Z: 02:00 +11 → 01:30 +1030 (01:30-02:00 repeated)
var transitions2024 = []struct {
	zone string
	at   time.Time
}{
	{"Europe/Berlin", z(2024, 3, 31, 1, 0)},
	{"Europe/Berlin", z(2024, 10, 27, 1, 0)},
	{"America/New_York", z(2024, 3, 10, 7, 0)},
	{"America/New_York", z(2024, 11, 3, 6, 0)},
	{"Australia/Lord_Howe", z(2024, 10, 5, 15, 30)},
	{"Australia/Lord_Howe", z(2024, 4, 6, 15, 0)},
}

// z is an instant in UTC, to the minute.
func z(y int, mo time.Month, d, h, mi int) time.Time {
	return time.Date(y, mo, d, h, mi, 0, 0, time.UTC)
}

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

// dstCases: successive fire times from an instant, across one transition.
// Comments give each fire time's local wall time.
var dstCases = []struct {
	name  string
	zone  string
	expr  string
	after time.Time
	want  []time.Time
}{
	// Europe/Berlin, spring.
	{"berlin spring fixed: 02:30 moves to 03:30 CEST", "Europe/Berlin", "0 30 2 * * ?", z(2024, 3, 30, 12, 0), []time.Time{
		z(2024, 3, 31, 1, 30), // 02:30 skipped → 03:30 CEST
		z(2024, 4, 1, 0, 30),  // 02:30 CEST
	}},
	{"berlin spring wildcard hours", "Europe/Berlin", "0 0 * * * ?", z(2024, 3, 30, 23, 30), []time.Time{
		z(2024, 3, 31, 0, 0), // 01:00 CET
		z(2024, 3, 31, 1, 0), // 02:00 skipped → 03:00 CEST, one fire with 03:00 itself
		z(2024, 3, 31, 2, 0), // 04:00 CEST
	}},
	{"berlin spring step hours", "Europe/Berlin", "0 0 */2 * * ?", z(2024, 3, 30, 22, 30), []time.Time{
		z(2024, 3, 30, 23, 0), // 00:00 CET
		z(2024, 3, 31, 1, 0),  // 02:00 skipped → 03:00 CEST
		z(2024, 3, 31, 2, 0),  // 04:00 CEST
	}},
	{"berlin spring fixed range", "Europe/Berlin", "0 0 1-3 * * ?", z(2024, 3, 30, 23, 30), []time.Time{
		z(2024, 3, 31, 0, 0),  // 01:00 CET
		z(2024, 3, 31, 1, 0),  // 02:00 skipped → 03:00 CEST, one fire with 03:00 itself
		z(2024, 3, 31, 23, 0), // 01:00 CEST next day
	}},
	{"berlin spring skipped minutes keep their order", "Europe/Berlin", "0 15,45 2,3 * * ?", z(2024, 3, 31, 0, 0), []time.Time{
		z(2024, 3, 31, 1, 15), // 02:15 → 03:15 CEST, one fire with 03:15
		z(2024, 3, 31, 1, 45), // 02:45 → 03:45 CEST, one fire with 03:45
		z(2024, 4, 1, 0, 15),  // 02:15 CEST
	}},
	// Europe/Berlin, fall.
	{"berlin fall fixed: first occurrence only", "Europe/Berlin", "0 30 2 * * ?", z(2024, 10, 26, 12, 0), []time.Time{
		z(2024, 10, 27, 0, 30), // 02:30 CEST
		z(2024, 10, 28, 1, 30), // 02:30 CET next day
	}},
	{"berlin fall wildcard hours: both occurrences", "Europe/Berlin", "0 0 * * * ?", z(2024, 10, 26, 23, 30), []time.Time{
		z(2024, 10, 27, 0, 0), // 02:00 CEST
		z(2024, 10, 27, 1, 0), // 02:00 CET
		z(2024, 10, 27, 2, 0), // 03:00 CET
	}},
	{"berlin fall step hours: both occurrences", "Europe/Berlin", "0 0 */2 * * ?", z(2024, 10, 26, 21, 30), []time.Time{
		z(2024, 10, 26, 22, 0), // 00:00 CEST
		z(2024, 10, 27, 0, 0),  // 02:00 CEST
		z(2024, 10, 27, 1, 0),  // 02:00 CET
		z(2024, 10, 27, 3, 0),  // 04:00 CET
	}},
	{"berlin fall step from a value: both occurrences", "Europe/Berlin", "0 30 2/6 * * ?", z(2024, 10, 26, 23, 0), []time.Time{
		z(2024, 10, 27, 0, 30), // 02:30 CEST
		z(2024, 10, 27, 1, 30), // 02:30 CET
		z(2024, 10, 27, 7, 30), // 08:30 CET
	}},
	{"berlin fall fixed range: first occurrence only", "Europe/Berlin", "0 0 1-3 * * ?", z(2024, 10, 26, 22, 30), []time.Time{
		z(2024, 10, 26, 23, 0), // 01:00 CEST
		z(2024, 10, 27, 0, 0),  // 02:00 CEST
		z(2024, 10, 27, 2, 0),  // 03:00 CET
		z(2024, 10, 28, 0, 0),  // 01:00 CET next day
	}},
	{"berlin fall fixed hour, from inside the repetition", "Europe/Berlin", "0 30 2 * * ?", z(2024, 10, 27, 1, 10), []time.Time{
		z(2024, 10, 28, 1, 30), // 02:30 CET happens next, but only the first occurrence fires
	}},
	{"berlin fall wildcard hours, from inside the first occurrence", "Europe/Berlin", "0 10,50 * * * ?", z(2024, 10, 27, 0, 30), []time.Time{
		z(2024, 10, 27, 0, 50), // 02:50 CEST
		z(2024, 10, 27, 1, 10), // 02:10 CET: its first occurrence was before the start
		z(2024, 10, 27, 1, 50), // 02:50 CET
		z(2024, 10, 27, 2, 10), // 03:10 CET
	}},

	// America/New_York, spring.
	{"new york spring fixed", "America/New_York", "0 30 2 * * ?", z(2024, 3, 9, 12, 0), []time.Time{
		z(2024, 3, 10, 7, 30), // 02:30 skipped → 03:30 EDT
		z(2024, 3, 11, 6, 30), // 02:30 EDT
	}},
	{"new york spring wildcard hours", "America/New_York", "0 0 * * * ?", z(2024, 3, 10, 5, 30), []time.Time{
		z(2024, 3, 10, 6, 0), // 01:00 EST
		z(2024, 3, 10, 7, 0), // 02:00 skipped → 03:00 EDT
		z(2024, 3, 10, 8, 0), // 04:00 EDT
	}},
	{"new york spring step hours", "America/New_York", "0 30 */2 * * ?", z(2024, 3, 10, 4, 0), []time.Time{
		z(2024, 3, 10, 5, 30), // 00:30 EST
		z(2024, 3, 10, 7, 30), // 02:30 skipped → 03:30 EDT
		z(2024, 3, 10, 8, 30), // 04:30 EDT
	}},
	// America/New_York, fall.
	{"new york fall fixed", "America/New_York", "0 30 1 * * ?", z(2024, 11, 2, 12, 0), []time.Time{
		z(2024, 11, 3, 5, 30), // 01:30 EDT
		z(2024, 11, 4, 6, 30), // 01:30 EST next day
	}},
	{"new york fall fixed list", "America/New_York", "0 0,30 1 * * ?", z(2024, 11, 3, 4, 30), []time.Time{
		z(2024, 11, 3, 5, 0),  // 01:00 EDT
		z(2024, 11, 3, 5, 30), // 01:30 EDT
		z(2024, 11, 4, 6, 0),  // 01:00 EST next day
	}},
	{"new york fall wildcard hours", "America/New_York", "0 0 * * * ?", z(2024, 11, 3, 4, 30), []time.Time{
		z(2024, 11, 3, 5, 0), // 01:00 EDT
		z(2024, 11, 3, 6, 0), // 01:00 EST
		z(2024, 11, 3, 7, 0), // 02:00 EST
	}},
	{"new york fall step hours", "America/New_York", "0 30 1/2 * * ?", z(2024, 11, 3, 4, 0), []time.Time{
		z(2024, 11, 3, 5, 30), // 01:30 EDT
		z(2024, 11, 3, 6, 30), // 01:30 EST
		z(2024, 11, 3, 8, 30), // 03:30 EST
	}},

	// Australia/Lord_Howe, spring (a 30-minute gap).
	{"lord howe spring fixed: 02:15 moves to 02:45", "Australia/Lord_Howe", "0 15 2 * * ?", z(2024, 10, 5, 12, 0), []time.Time{
		z(2024, 10, 5, 15, 45), // 02:15 skipped → 02:45 +11
		z(2024, 10, 6, 15, 15), // 02:15 +11
	}},
	{"lord howe spring: a moved time after a later real one", "Australia/Lord_Howe", "0 15,40 2 * * ?", z(2024, 10, 5, 15, 0), []time.Time{
		z(2024, 10, 5, 15, 40), // 02:40 +11
		z(2024, 10, 5, 15, 45), // 02:15 skipped → 02:45 +11
		z(2024, 10, 6, 15, 15), // 02:15 +11
	}},
	{"lord howe spring wildcard hours", "Australia/Lord_Howe", "0 0,15 * * * ?", z(2024, 10, 5, 14, 0), []time.Time{
		z(2024, 10, 5, 14, 30), // 01:00 +1030
		z(2024, 10, 5, 14, 45), // 01:15 +1030
		z(2024, 10, 5, 15, 30), // 02:00 skipped → 02:30 +11
		z(2024, 10, 5, 15, 45), // 02:15 skipped → 02:45 +11
		z(2024, 10, 5, 16, 0),  // 03:00 +11
	}},
	{"lord howe spring step hours", "Australia/Lord_Howe", "0 15 */2 * * ?", z(2024, 10, 5, 13, 0), []time.Time{
		z(2024, 10, 5, 13, 45), // 00:15 +1030
		z(2024, 10, 5, 15, 45), // 02:15 skipped → 02:45 +11
		z(2024, 10, 5, 17, 15), // 04:15 +11
	}},
	// Australia/Lord_Howe, fall (01:30-02:00 repeated).
	{"lord howe fall fixed", "Australia/Lord_Howe", "0 45 1 * * ?", z(2024, 4, 6, 12, 0), []time.Time{
		z(2024, 4, 6, 14, 45), // 01:45 +11
		z(2024, 4, 7, 15, 15), // 01:45 +1030 next day
	}},
	{"lord howe fall wildcard hours", "Australia/Lord_Howe", "0 45 * * * ?", z(2024, 4, 6, 13, 0), []time.Time{
		z(2024, 4, 6, 13, 45), // 00:45 +11
		z(2024, 4, 6, 14, 45), // 01:45 +11
		z(2024, 4, 6, 15, 15), // 01:45 +1030
		z(2024, 4, 6, 16, 15), // 02:45 +1030
	}},
	{"lord howe fall step hours", "Australia/Lord_Howe", "0 45 1/12 * * ?", z(2024, 4, 6, 14, 0), []time.Time{
		z(2024, 4, 6, 14, 45), // 01:45 +11
		z(2024, 4, 6, 15, 15), // 01:45 +1030
		z(2024, 4, 7, 3, 15),  // 13:45 +1030
	}},
	{"lord howe fall hourly", "Australia/Lord_Howe", "0 0 * * * ?", z(2024, 4, 6, 13, 30), []time.Time{
		z(2024, 4, 6, 14, 0),  // 01:00 +11; 02:00 +11 never shows: the clock turns back to 01:30 first
		z(2024, 4, 6, 15, 30), // 02:00 +1030
		z(2024, 4, 6, 16, 30), // 03:00 +1030
	}},
}

func TestDaylightSavingNext(t *testing.T) {
	for _, c := range dstCases {
		loc := mustZone(t, c.zone)
		e, err := Parse(c.expr, loc)
		if err != nil {
			t.Fatalf("%s: Parse(%q): %v", c.name, c.expr, err)
		}
		at := c.after
		for i, want := range c.want {
			got, ok := e.Next(at)
			if !ok || !got.Equal(want) {
				t.Errorf("%s: %q fire %d: Next(%s) = %s, %v; want %s (%s local)",
					c.name, c.expr, i, at.Format(time.RFC3339), got.Format(time.RFC3339), ok, want.Format(time.RFC3339), want.In(loc).Format("15:04 MST"))
				break
			}
			if got.Location() != time.UTC {
				t.Errorf("%s: Next returned %s, not in UTC", c.name, got)
			}
			at = got
		}
	}
}

// TestDaylightSavingMatchesEverySecond compares, second by second over a
// few hours around the transition, Matches with the fire times Next lists.
func TestDaylightSavingMatchesEverySecond(t *testing.T) {
	for _, c := range dstCases {
		loc := mustZone(t, c.zone)
		e, err := Parse(c.expr, loc)
		if err != nil {
			t.Fatalf("%s: Parse(%q): %v", c.name, c.expr, err)
		}
		from, to := c.after, c.after.Add(5*time.Hour)
		fires := map[int64]bool{}
		for at := from; ; {
			next, ok := e.Next(at)
			if !ok || next.After(to) {
				break
			}
			fires[next.Unix()] = true
			at = next
		}
		for u := from.Add(time.Second); !u.After(to); u = u.Add(time.Second) {
			if got := e.Matches(u); got != fires[u.Unix()] {
				t.Errorf("%s: %q Matches(%s) = %v, but Next lists it: %v", c.name, c.expr, u.Format(time.RFC3339), got, fires[u.Unix()])
				break
			}
		}
	}
}

// TestDaylightSavingFixedRate checks that frequent expressions fire at
// every real interval across each transition: none doubled, none missing.
func TestDaylightSavingFixedRate(t *testing.T) {
	for _, c := range []struct {
		expr   string
		period time.Duration
		zones  []string
	}{
		{"0 */15 * * * ?", 15 * time.Minute, []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}},
		{"*/20 * * * * ?", 20 * time.Second, []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}},
		{"0 * * * * ?", time.Minute, []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}},
		{"0 0/30 * * * ?", 30 * time.Minute, []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}},
		// Lord Howe moves by half an hour, so whole hours are not evenly
		// spaced in real time there.
		{"0 0 * * * ?", time.Hour, []string{"Europe/Berlin", "America/New_York"}},
	} {
		for _, tr := range transitions2024 {
			if !contains(c.zones, tr.zone) {
				continue
			}
			e, err := Parse(c.expr, mustZone(t, tr.zone))
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.expr, err)
			}
			start := tr.at.Add(-6 * time.Hour)
			prev, ok := e.Next(start)
			if !ok || !prev.Equal(start.Add(c.period)) {
				t.Errorf("%s in %s: first fire after %s = %s, %v", c.expr, tr.zone, start, prev, ok)
				continue
			}
			for prev.Before(tr.at.Add(6 * time.Hour)) {
				next, ok := e.Next(prev)
				if !ok || next.Sub(prev) != c.period {
					t.Errorf("%s in %s: fire after %s (%s local) is %s (%s local), want %s later",
						c.expr, tr.zone, prev, prev.In(e.Location()).Format("15:04:05 MST"), next, next.In(e.Location()).Format("15:04:05 MST"), c.period)
					break
				}
				prev = next
			}
		}
	}
}

// TestDaylightSavingFixedHourEveryMinute counts the fires of a fixed hour
// with every minute on the days of change: 60 on the spring day (moved
// after the gap) and 60 on the fall day (the first occurrence only).
func TestDaylightSavingFixedHourEveryMinute(t *testing.T) {
	for _, c := range []struct {
		zone, expr  string
		day         time.Time // a UTC instant before the local day starts
		first, last time.Time
	}{
		{"Europe/Berlin", "0 * 2 * * ?", z(2024, 3, 30, 20, 0), z(2024, 3, 31, 1, 0), z(2024, 3, 31, 1, 59)},
		{"Europe/Berlin", "0 * 2 * * ?", z(2024, 10, 26, 20, 0), z(2024, 10, 27, 0, 0), z(2024, 10, 27, 0, 59)},
		{"America/New_York", "0 * 2 * * ?", z(2024, 3, 10, 4, 0), z(2024, 3, 10, 7, 0), z(2024, 3, 10, 7, 59)},
		{"America/New_York", "0 * 1 * * ?", z(2024, 11, 3, 4, 0), z(2024, 11, 3, 5, 0), z(2024, 11, 3, 5, 59)},
		// Lord Howe: 02:00-02:29 move to 02:30-02:59, where they meet the
		// real 02:30-02:59: 30 fires. In the fall 01:30-01:59 repeat: 60.
		{"Australia/Lord_Howe", "0 * 2 * * ?", z(2024, 10, 5, 12, 0), z(2024, 10, 5, 15, 30), z(2024, 10, 5, 15, 59)},
		{"Australia/Lord_Howe", "0 * 1 * * ?", z(2024, 4, 6, 12, 0), z(2024, 4, 6, 14, 0), z(2024, 4, 6, 14, 59)},
	} {
		e, err := Parse(c.expr, mustZone(t, c.zone))
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.expr, err)
		}
		var fires []time.Time
		for at := c.day; ; {
			next, ok := e.Next(at)
			if !ok || next.After(c.day.Add(20*time.Hour)) {
				break
			}
			fires = append(fires, next)
			at = next
		}
		want := int(c.last.Sub(c.first)/time.Minute) + 1
		if len(fires) != want || !fires[0].Equal(c.first) || !fires[len(fires)-1].Equal(c.last) {
			t.Errorf("%s in %s: %d fires from %v to %v, want %d from %s to %s", c.expr, c.zone, len(fires), first(fires), last(fires), want, c.first, c.last)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func first(ts []time.Time) any {
	if len(ts) == 0 {
		return "none"
	}
	return ts[0]
}

func last(ts []time.Time) any {
	if len(ts) == 0 {
		return "none"
	}
	return ts[len(ts)-1]
}

package cron

import (
	"sync"
	"testing"
	"time"
	"unsafe"
)

// d is a UTC instant to the second.
func d(y int, mo time.Month, day, h, mi, s int) time.Time {
	return time.Date(y, mo, day, h, mi, s, 0, time.UTC)
}

// nextCases: successive fire times in UTC; a nil entry at the end means
// there is no fire time after the last one.
var nextCases = []struct {
	name  string
	expr  string
	after time.Time
	want  []time.Time
}{
	{"step from a value", "5/15 * * * * ?", d(2024, 1, 1, 10, 0, 0), []time.Time{
		d(2024, 1, 1, 10, 0, 5), d(2024, 1, 1, 10, 0, 20), d(2024, 1, 1, 10, 0, 35), d(2024, 1, 1, 10, 0, 50), d(2024, 1, 1, 10, 1, 5)}},
	{"minutes wrapping past the hour", "0 50-10 * * * ?", d(2024, 1, 1, 10, 9, 30), []time.Time{
		d(2024, 1, 1, 10, 10, 0), d(2024, 1, 1, 10, 50, 0), d(2024, 1, 1, 10, 51, 0)}},
	{"hours wrapping past midnight", "0 0 22-2 * * ?", d(2024, 1, 1, 21, 0, 0), []time.Time{
		d(2024, 1, 1, 22, 0, 0), d(2024, 1, 1, 23, 0, 0), d(2024, 1, 2, 0, 0, 0), d(2024, 1, 2, 1, 0, 0), d(2024, 1, 2, 2, 0, 0), d(2024, 1, 2, 22, 0, 0)}},
	{"months wrapping past the year", "0 0 0 1 NOV-FEB ?", d(2024, 2, 15, 0, 0, 0), []time.Time{
		d(2024, 11, 1, 0, 0, 0), d(2024, 12, 1, 0, 0, 0), d(2025, 1, 1, 0, 0, 0), d(2025, 2, 1, 0, 0, 0), d(2025, 11, 1, 0, 0, 0)}},
	{"weekdays wrapping past Saturday", "0 0 0 ? * FRI-MON", d(2024, 1, 3, 0, 0, 0), []time.Time{
		d(2024, 1, 5, 0, 0, 0), d(2024, 1, 6, 0, 0, 0), d(2024, 1, 7, 0, 0, 0), d(2024, 1, 8, 0, 0, 0), d(2024, 1, 12, 0, 0, 0)}},
	{"working days", "0 0 12 ? * MON-FRI", d(2024, 1, 5, 12, 0, 0), []time.Time{
		d(2024, 1, 8, 12, 0, 0), d(2024, 1, 9, 12, 0, 0)}},
	{"two hours every five minutes", "0 0/5 14,18 * * ?", d(2024, 1, 1, 14, 52, 0), []time.Time{
		d(2024, 1, 1, 14, 55, 0), d(2024, 1, 1, 18, 0, 0), d(2024, 1, 1, 18, 5, 0)}},
	{"Wednesdays of March", "0 10,44 14 ? 3 WED", d(2024, 3, 1, 0, 0, 0), []time.Time{
		d(2024, 3, 6, 14, 10, 0), d(2024, 3, 6, 14, 44, 0), d(2024, 3, 13, 14, 10, 0)}},

	// W: the nearest weekday, never leaving the month.
	{"1W on a Saturday goes to Monday the 3rd", "0 0 0 1W * ?", d(2024, 5, 31, 12, 0, 0), []time.Time{
		d(2024, 6, 3, 0, 0, 0), d(2024, 7, 1, 0, 0, 0), d(2024, 8, 1, 0, 0, 0), d(2024, 9, 2, 0, 0, 0)}}, // Sep 1 is a Sunday
	{"15W on a Saturday goes to Friday", "0 0 0 15W * ?", d(2024, 6, 1, 0, 0, 0), []time.Time{
		d(2024, 6, 14, 0, 0, 0), d(2024, 7, 15, 0, 0, 0)}},
	{"15W on a Sunday goes to Monday, found from the Sunday's end", "0 0 0 15W * ?", d(2024, 9, 15, 23, 59, 59), []time.Time{
		d(2024, 9, 16, 0, 0, 0), d(2024, 10, 15, 0, 0, 0)}},
	{"31W: a Sunday on the last day goes back to Friday; no 31st, no fire", "0 0 0 31W * ?", d(2024, 3, 1, 0, 0, 0), []time.Time{
		d(2024, 3, 29, 0, 0, 0), d(2024, 5, 31, 0, 0, 0), d(2024, 7, 31, 0, 0, 0), d(2024, 8, 30, 0, 0, 0), d(2024, 10, 31, 0, 0, 0)}},
	{"LW: the last weekday", "0 0 0 LW * ?", d(2024, 8, 1, 0, 0, 0), []time.Time{
		d(2024, 8, 30, 0, 0, 0), d(2024, 9, 30, 0, 0, 0), d(2024, 10, 31, 0, 0, 0), d(2024, 11, 29, 0, 0, 0), d(2024, 12, 31, 0, 0, 0)}},
	{"a list of L, a day and W", "0 0 0 1,L,15W * ?", d(2024, 6, 1, 0, 0, 0), []time.Time{
		d(2024, 6, 14, 0, 0, 0), d(2024, 6, 30, 0, 0, 0), d(2024, 7, 1, 0, 0, 0), d(2024, 7, 15, 0, 0, 0), d(2024, 7, 31, 0, 0, 0)}},
	{"L-30 exists only in 31-day months", "0 0 0 L-30 * ?", d(2024, 1, 15, 0, 0, 0), []time.Time{
		d(2024, 3, 1, 0, 0, 0), d(2024, 5, 1, 0, 0, 0), d(2024, 7, 1, 0, 0, 0), d(2024, 8, 1, 0, 0, 0)}},

	// Day-of-week specials.
	{"the fifth Monday, in months that have one", "0 0 0 ? * 2#5", d(2024, 1, 30, 0, 0, 0), []time.Time{
		d(2024, 4, 29, 0, 0, 0), d(2024, 7, 29, 0, 0, 0), d(2024, 9, 30, 0, 0, 0), d(2024, 12, 30, 0, 0, 0)}},
	{"the third Friday", "0 15 10 ? * 6#3", d(2024, 3, 1, 0, 0, 0), []time.Time{
		d(2024, 3, 15, 10, 15, 0), d(2024, 4, 19, 10, 15, 0)}},
	{"the last Sunday", "0 0 0 ? * 1L", d(2024, 1, 1, 0, 0, 0), []time.Time{
		d(2024, 1, 28, 0, 0, 0), d(2024, 2, 25, 0, 0, 0), d(2024, 3, 31, 0, 0, 0)}},
	{"L alone is Saturday", "0 0 0 ? * L", d(2024, 1, 1, 0, 0, 0), []time.Time{
		d(2024, 1, 6, 0, 0, 0), d(2024, 1, 13, 0, 0, 0)}},
	{"the last Friday during 2002-2005", "0 15 10 ? * 6L 2002-2005", d(2005, 11, 1, 0, 0, 0), []time.Time{
		d(2005, 11, 25, 10, 15, 0), d(2005, 12, 30, 10, 15, 0), {}}},

	// Days that never come, and the year limits.
	{"February 30th never comes", "0 0 0 30 2 ?", d(2024, 1, 1, 0, 0, 0), []time.Time{{}}},
	{"30W in February never comes", "0 0 0 30W 2 ?", d(2024, 1, 1, 0, 0, 0), []time.Time{{}}},
	{"the last leap day before 2100", "0 0 0 29 2 ?", d(2095, 1, 1, 0, 0, 0), []time.Time{
		d(2096, 2, 29, 0, 0, 0), {}}},
	{"the last second", "* * * * * ?", d(2099, 12, 31, 23, 59, 58), []time.Time{
		d(2099, 12, 31, 23, 59, 59), {}}},
	{"named years", "0 0 0 1 1 ? 2098-2099", d(2024, 1, 1, 0, 0, 0), []time.Time{
		d(2098, 1, 1, 0, 0, 0), d(2099, 1, 1, 0, 0, 0), {}}},
	{"past years end", "0 0 0 1 1 ? 2001", d(2024, 1, 1, 0, 0, 0), []time.Time{{}}},
	{"before 1970 starts at 1970", "0 0 0 1 1 ?", d(1900, 1, 1, 0, 0, 0), []time.Time{
		d(1970, 1, 1, 0, 0, 0), d(1971, 1, 1, 0, 0, 0)}},
	{"after 2099 there is nothing", "* * * * * ?", d(2150, 1, 1, 0, 0, 0), []time.Time{{}}},
	{"strictly after a fire time", "0 0 12 * * ?", d(2024, 1, 1, 12, 0, 0), []time.Time{
		d(2024, 1, 2, 12, 0, 0)}},
}

func TestNext(t *testing.T) {
	for _, c := range nextCases {
		e, err := Parse(c.expr, nil)
		if err != nil {
			t.Fatalf("%s: Parse(%q): %v", c.name, c.expr, err)
		}
		at := c.after
		for i, want := range c.want {
			got, ok := e.Next(at)
			if want.IsZero() {
				if ok {
					t.Errorf("%s: %q Next(%s) = %s, want none", c.name, c.expr, at, got)
				}
				break
			}
			if !ok || !got.Equal(want) {
				t.Errorf("%s: %q fire %d: Next(%s) = %s, %v; want %s", c.name, c.expr, i, at, got, ok, want)
				break
			}
			if !e.Matches(got) {
				t.Errorf("%s: %q Matches(%s) = false", c.name, c.expr, got)
			}
			at = got
		}
	}
}

func TestNextSubSecond(t *testing.T) {
	e, err := Parse("* * * * * ?", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ after, want time.Time }{
		{d(2024, 1, 1, 10, 0, 0).Add(500 * time.Millisecond), d(2024, 1, 1, 10, 0, 1)},
		{d(2024, 1, 1, 10, 0, 0).Add(-time.Nanosecond), d(2024, 1, 1, 10, 0, 0)},
		{d(2024, 1, 1, 10, 0, 0), d(2024, 1, 1, 10, 0, 1)},
	} {
		if got, ok := e.Next(c.after); !ok || !got.Equal(c.want) {
			t.Errorf("Next(%s) = %s, %v; want %s", c.after.Format(time.RFC3339Nano), got, ok, c.want)
		}
	}
	if !e.Matches(d(2024, 1, 1, 10, 0, 0).Add(999 * time.Millisecond)) {
		t.Error("Matches is about the whole second")
	}
}

// TestNextInOtherZones: the instant passed to Next may be in any location,
// and the result is in UTC whatever the expression's zone.
func TestNextInOtherZones(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	tokyo := mustZone(t, "Asia/Tokyo")
	e, err := Parse("0 30 9 ? * MON-FRI", berlin)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Date(2024, 6, 3, 16, 0, 0, 0, tokyo) // Monday 09:00 in Berlin
	got, ok := e.Next(after)
	want := d(2024, 6, 3, 7, 30, 0) // 09:30 CEST
	if !ok || !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("Next(%s) = %s, %v; want %s in UTC", after, got, ok, want)
	}
}

func TestMatchesOutsideYears(t *testing.T) {
	e, err := Parse("* * * * * ?", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   time.Time
		want bool
	}{
		{d(1969, 12, 31, 23, 59, 59), false},
		{d(1970, 1, 1, 0, 0, 0), true},
		{d(2099, 12, 31, 23, 59, 59), true},
		{d(2100, 1, 1, 0, 0, 0), false},
		{time.Time{}, false},
		{time.Unix(1<<62, 0), false},
	} {
		if got := e.Matches(c.at); got != c.want {
			t.Errorf("Matches(%s) = %v, want %v", c.at, got, c.want)
		}
	}
}

func TestNextDoesNotAllocate(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	for _, c := range []struct {
		expr string
		loc  *time.Location
	}{
		{"0 0/5 * * * ?", nil},
		{"0 30 2 ? * MON-FRI", berlin},
		{"0 0 12 LW * ?", nil},
		{"0 0 0 29 2 ? *", nil},
		{"0 0 * * * ?", berlin}, // crosses the spring change below
	} {
		e, err := Parse(c.expr, c.loc)
		if err != nil {
			t.Fatal(err)
		}
		at := d(2024, 3, 30, 22, 0, 0)
		allocs := testing.AllocsPerRun(100, func() {
			next, _ := e.Next(at)
			_ = e.Matches(next)
		})
		if allocs != 0 {
			t.Errorf("%q: Next and Matches allocate %.1f times per call", c.expr, allocs)
		}
	}
}

// TestExpressionSize keeps a parsed expression small: its field sets are
// bitmasks (the expression's text is the caller's string, not copied).
func TestExpressionSize(t *testing.T) {
	if size := unsafe.Sizeof(Expression{}); size > 96 {
		t.Errorf("an Expression takes %d bytes, more than 96", size)
	}
}

// TestConcurrentUse runs Next and Matches on one Expression from several
// goroutines; the race detector checks that they only read it.
func TestConcurrentUse(t *testing.T) {
	e, err := Parse("0 */15 * * * ?", mustZone(t, "America/New_York"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]time.Time, 4)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := d(2024, 11, 3, 4, 0, 0)
			for range 100 {
				next, ok := e.Next(at)
				if !ok || !e.Matches(next) {
					return
				}
				at = next
			}
			results[g] = at
		}()
	}
	wg.Wait()
	for g, got := range results {
		// 100 quarter hours later; the fall-back adds no fire time.
		if want := d(2024, 11, 4, 5, 0, 0); !got.Equal(want) {
			t.Errorf("goroutine %d ended at %s, want %s", g, got, want)
		}
	}
}

// TestMatchesWallCoversBothPassesOfARepeatedHour: where Matches fires a
// fixed hour only on its first pass, MatchesWall (the wall clock, for
// exclusion calendars) matches both.
func TestMatchesWallCoversBothPassesOfARepeatedHour(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	e, err := Parse("0 30 2 * * ?", berlin)
	if err != nil {
		t.Fatal(err)
	}
	first := time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)  // 02:30 CEST
	second := time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC) // 02:30 CET
	if !e.Matches(first) || e.Matches(second) {
		t.Fatalf("Matches: first pass %v, second pass %v; want true, false", e.Matches(first), e.Matches(second))
	}
	if !e.MatchesWall(first) || !e.MatchesWall(second) {
		t.Fatalf("MatchesWall: first pass %v, second pass %v; want both", e.MatchesWall(first), e.MatchesWall(second))
	}
	if e.MatchesWall(first.Add(time.Second)) {
		t.Fatalf("MatchesWall(02:30:01) = true")
	}
}

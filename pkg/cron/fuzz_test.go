package cron

import (
	"errors"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzParse parses arbitrary text as an expression in one of a few zones:
// Parse never panics; a rejection is a *SyntaxError naming a field and a
// position inside the text (or just after its end); an accepted expression
// keeps its text, and from an arbitrary instant its fire times strictly
// increase and each one Matches.
func FuzzParse(f *testing.F) {
	zones := []*time.Location{time.UTC}
	for _, name := range []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"} {
		zones = append(zones, mustZone(f, name))
	}
	fields := map[string]bool{"seconds": true, "minutes": true, "hours": true, "day-of-month": true,
		"month": true, "day-of-week": true, "year": true, "expression": true}
	for _, seed := range []string{
		"0 0/5 * * * ?", "0 30 2 ? * MON-FRI", "0 0 12 LW * ?", "0 0 0 29 2 ? *",
		"5/15 50-10 22-2 ? NOV-FEB FRI-MON", "0 15 10 L-2 * ? 2010", "0 15 10 2W,16 * ? 2010",
		"0 15 10 ? * 6#3", "0 15 10 ? * 6L 2002-2005", "0 0 0 1,L,15W * ?", "/5 * * * * ?",
		"0 43 9 ? * SAT,SUN,L", "0/ 0 8-18 ? * 2-6", "0 0 0 ? * 0/120", "* * * * Jan-Foo ?",
		"0 0 * * * *", "", "?", "0 0 0 L-31 * ?", "0 0 0 ? * 6#6",
	} {
		f.Add(seed, uint8(0), int64(1700000000))
		f.Add(seed, uint8(1), int64(1711846800)) // 2024-03-31 01:00Z, Berlin's spring change
		f.Add(seed, uint8(3), int64(1712415600)) // 2024-04-06 15:00Z, Lord Howe's fall change
	}
	f.Fuzz(func(t *testing.T, expr string, zone uint8, at int64) {
		loc := zones[int(zone)%len(zones)]
		e, err := Parse(expr, loc)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %v, not a *SyntaxError", expr, err)
			}
			if !fields[se.Field] || se.Pos < 1 || se.Pos > utf8.RuneCountInString(expr)+1 || se.Msg == "" {
				t.Fatalf("Parse(%q) = %#v: field, position or message out of place", expr, se)
			}
			return
		}
		if e.String() != expr || e.Location() != loc {
			t.Fatalf("Parse(%q) kept %q in %v", expr, e.String(), e.Location())
		}
		// Instants from 1960 to 2110, to cross both ends of the years.
		const from, span = -315619200, 4733510400
		prev := time.Unix(from+(at%span+span)%span, 0)
		for range 5 {
			next, ok := e.Next(prev)
			if !ok {
				break
			}
			if !next.After(prev) || !e.Matches(next) {
				t.Fatalf("%q in %v: Next(%s) = %s (after it: %v, matches: %v)", expr, loc, prev, next, next.After(prev), e.Matches(next))
			}
			prev = next
		}
	})
}

package cron

import (
	"testing"
	"time"
)

// BenchmarkNext follows the fire times of typical expressions one after
// the other from 2024, going back to the start after `years` years (or
// when they run out). After 2037 the time package derives a zone's offsets
// from its rule rather than a table, which makes each look-up several times
// slower: the 2050 case shows that.
func BenchmarkNext(b *testing.B) {
	berlin := mustZone(b, "Europe/Berlin")
	for _, c := range []struct {
		name, expr string
		loc        *time.Location
		from       int
		years      int
	}{
		{"every5min", "0 0/5 * * * ?", nil, 2024, 2},
		{"weekdays0230Berlin", "0 30 2 ? * MON-FRI", berlin, 2024, 2},
		{"weekdays0230Berlin2050", "0 30 2 ? * MON-FRI", berlin, 2050, 2},
		{"lastWeekday", "0 0 12 LW * ?", nil, 2024, 2},
		{"leapDay", "0 0 0 29 2 ? *", nil, 2024, 76},
	} {
		b.Run(c.name, func(b *testing.B) {
			e, err := Parse(c.expr, c.loc)
			if err != nil {
				b.Fatal(err)
			}
			start := time.Date(c.from, 1, 1, 0, 0, 0, 0, time.UTC)
			end := start.AddDate(c.years, 0, 0)
			at := start
			b.ReportAllocs()
			for b.Loop() {
				next, ok := e.Next(at)
				if !ok || next.After(end) {
					next = start
				}
				at = next
			}
		})
	}
}

func BenchmarkMatches(b *testing.B) {
	e, err := Parse("0 30 2 ? * MON-FRI", mustZone(b, "Europe/Berlin"))
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2024, 3, 4, 1, 30, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if !e.Matches(at) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("0 15 10 ? * MON-FRI 2024-2030", nil); err != nil {
			b.Fatal(err)
		}
	}
}

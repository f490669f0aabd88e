package calendar

import (
	"testing"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// germanHolidays is a dates calendar of ten public holidays a year in
// 2026-2030 (Berlin), the usual companion of a weekend calendar.
func germanHolidays() *taskdv1.Calendar {
	var ds [][3]int32
	easter := map[int32][2]int32{2026: {4, 5}, 2027: {3, 28}, 2028: {4, 16}, 2029: {4, 1}, 2030: {4, 21}}
	for y := int32(2026); y <= 2030; y++ {
		e := time.Date(int(y), time.Month(easter[y][0]), int(easter[y][1]), 0, 0, 0, 0, time.UTC)
		for _, off := range []int{-2, 1, 39, 50} { // Good Friday, Easter Monday, Ascension, Whit Monday
			d := e.AddDate(0, 0, off)
			ds = append(ds, [3]int32{y, int32(d.Month()), int32(d.Day())})
		}
		ds = append(ds, [3]int32{y, 1, 1}, [3]int32{y, 5, 1}, [3]int32{y, 10, 3},
			[3]int32{y, 12, 24}, [3]int32{y, 12, 25}, [3]int32{y, 12, 26})
	}
	return datesCal("holidays", "Europe/Berlin", ds...)
}

// instants spreads n instants over 2026-2030, every 43 hours and some
// minutes, so they fall on every weekday and time of day.
func instants(n int) []time.Time {
	out := make([]time.Time, n)
	t := at("2026-01-01T00:00:00Z")
	for i := range out {
		out[i] = t
		t = t.Add(43*time.Hour + 17*time.Minute + 3*time.Second)
	}
	return out
}

func benchNext(b *testing.B, set Set, ts []time.Time) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := set.NextIncluded(ts[i%len(ts)]); !ok {
			b.Fatal("nothing free")
		}
		i++
	}
}

// BenchmarkNextIncludedWeekendHolidays: a weekly SAT,SUN calendar based on
// a holiday calendar, from instants spread over five years (about a third
// of them excluded).
func BenchmarkNextIncludedWeekendHolidays(b *testing.B) {
	weekend := mustCompile(b, withBase(weeklyDays("weekend", "Europe/Berlin", "SAT", "SUN"), "holidays"), germanHolidays())
	benchNext(b, Set{weekend}, instants(1024))
}

// BenchmarkNextIncludedWeekendHolidaysExcluded: the same chain, from
// excluded instants only (each call jumps at least once).
func BenchmarkNextIncludedWeekendHolidaysExcluded(b *testing.B) {
	weekend := mustCompile(b, withBase(weeklyDays("weekend", "Europe/Berlin", "SAT", "SUN"), "holidays"), germanHolidays())
	var ts []time.Time
	for _, t := range instants(4096) {
		if weekend.Excludes(t) {
			ts = append(ts, t)
		}
	}
	benchNext(b, Set{weekend}, ts)
}

// BenchmarkNextIncludedCronHours: a cron calendar excluding 00:00-08:00
// with the weekend chain, from instants spread over five years.
func BenchmarkNextIncludedCronHours(b *testing.B) {
	weekend := mustCompile(b, withBase(weeklyDays("weekend", "Europe/Berlin", "SAT", "SUN"), "holidays"), germanHolidays())
	early := mustCompile(b, cronExpr("early", "Europe/Berlin", "* * 0-7 ? * *"))
	benchNext(b, Set{weekend, early}, instants(1024))
}

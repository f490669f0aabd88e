package cron

import (
	"math"
	"math/bits"
	"time"
)

// The instants Next and Matches consider: nothing before the first day a
// zone can put in 1970 or after the last it can put in 2099.
var (
	firstInstant = daysFromCivil(MinYear, 1, 1)*secondsPerDay - 2*secondsPerDay
	lastInstant  = daysFromCivil(MaxYear+1, 1, 1)*secondsPerDay + 2*secondsPerDay
)

// Next returns the first fire time strictly after `after`, in UTC. ok is
// false when there is none up to the end of MaxYear in the expression's
// zone. Fire times are whole seconds; see the package comment for how
// daylight-saving changes move them. Next does not allocate.
func (e *Expression) Next(after time.Time) (t time.Time, ok bool) {
	sec := after.Unix() // whole seconds, rounded down
	if sec >= lastInstant {
		return time.Time{}, false
	}
	start := max(sec+1, firstInstant)
	u, ok := e.next(start)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(u, 0).UTC(), true
}

// Matches reports whether the second containing t is a fire time, that is
// whether Next would return it when asked for the fire time after the
// second before it. It decides this directly, without searching.
func (e *Expression) Matches(t time.Time) bool {
	s := t.Unix()
	if s < firstInstant || s >= lastInstant {
		return false
	}
	if e.loc == time.UTC {
		return e.matchesWall(s)
	}
	zt := time.Unix(s, 0).In(e.loc)
	_, off := zt.Zone()
	w := s + int64(off)
	if e.matchesWall(w) {
		r := resolve(e.loc, w)
		switch r.kind {
		case wallNormal:
			if r.first == s {
				return true
			}
		case wallRepeated:
			if r.first == s || (!e.fixedHour && r.second == s) {
				return true
			}
		}
	}
	// s may be where a wall time skipped by a spring-forward gap fires: in
	// the first gap-length of the zone period that follows the gap.
	zoneStart, _ := zt.ZoneBounds()
	if !zoneStart.IsZero() {
		ps := zoneStart.Unix()
		if s-ps < secondsPerDay {
			_, before := time.Unix(ps-1, 0).In(e.loc).Zone()
			if gap := int64(off - before); gap > 0 && s-ps < gap && e.matchesWall(w-gap) {
				return true
			}
		}
	}
	return false
}

// next returns the first fire instant (Unix seconds) ≥ start.
func (e *Expression) next(start int64) (int64, bool) {
	if e.loc == time.UTC {
		return e.nextWall(start)
	}
	zt := time.Unix(start, 0).In(e.loc)
	_, off := zt.Zone()
	wallStart := start + int64(off)
	from := wallStart
	zoneStart, zoneEnd := zt.ZoneBounds()
	if !zoneStart.IsZero() && start-zoneStart.Unix() < secondsPerDay {
		// start is just after a change of offset. If a spring-forward gap
		// ended at ps, the wall times the gap skipped fire in the first
		// gap-length after ps: search from the wall time that lands on start.
		ps := zoneStart.Unix()
		_, before := time.Unix(ps-1, 0).In(e.loc).Zone()
		if gap := int64(off - before); gap > 0 && start-ps < gap {
			from = start + int64(before)
		}
	}
	if !e.fixedHour && !zoneEnd.IsZero() && zoneEnd.Unix()-start < secondsPerDay {
		// start is just before a change of offset. If a fall-back follows,
		// the wall times it repeats fire again after it, including those
		// that first occurred before start: search from the wall time the
		// repetition starts at.
		pe := zoneEnd.Unix()
		_, after := zoneEnd.In(e.loc).Zone()
		if back := int64(off - after); back > 0 && start >= pe-back {
			from = min(from, pe+int64(after))
		}
	}

	// Walk the matching wall times in order. A wall time with one real
	// instant at or after start ends the search: no later wall time can
	// fire earlier. The second occurrence of a repeated wall time and the
	// moved instant of a skipped one can be overtaken by later wall times,
	// so they are kept as the best so far and the walk goes on (it ends
	// within the next few matching wall times).
	best, found := int64(math.MaxInt64), false
	for range 1000 {
		w, ok := e.nextWall(from)
		if !ok {
			break
		}
		r := resolve(e.loc, w)
		switch r.kind {
		case wallNormal:
			if r.first >= start {
				return min(best, r.first), true
			}
			from = max(w+1, wallStart)
		case wallRepeated:
			if r.first >= start {
				return min(best, r.first), true
			}
			if e.fixedHour {
				if start >= r.transition {
					from = max(w+1, r.edge) // the rest of the repetition fires nothing
				} else {
					from = max(w+1, wallStart)
				}
				continue
			}
			if r.second >= start {
				if start >= r.transition {
					return min(best, r.second), true
				}
				best, found = min(best, r.second), true
			}
			from = max(w+1, wallStart)
		case wallSkipped:
			if r.first >= start {
				best, found = min(best, r.first), true
			}
			// The rest of the gap moves to later instants than this one.
			from = max(w+1, r.edge)
		}
	}
	return best, found
}

// nextWall returns the first matching wall time (naive seconds) ≥ from, or
// ok = false when there is none up to the end of MaxYear.
func (e *Expression) nextWall(from int64) (int64, bool) {
	w := wallOf(from)
	if w.year < MinYear {
		w = wall{year: MinYear, month: 1, day: 1}
	}
	// The days of the month last looked at, kept while the search carries
	// from seconds up to days within one month.
	maskYear, maskMonth, days := 0, 0, uint32(0)
	for {
		if w.year > MaxYear {
			return 0, false
		}
		yi, ok := e.years.next(w.year - MinYear)
		if !ok || yi+MinYear > MaxYear {
			return 0, false
		}
		if y := yi + MinYear; y != w.year {
			w = wall{year: y, month: 1, day: 1}
		}
		m := nextBit(uint64(e.months), w.month)
		if m < 0 {
			w = wall{year: w.year + 1, month: 1, day: 1}
			continue
		}
		if m != w.month {
			w = wall{year: w.year, month: m, day: 1}
		}
		if w.year != maskYear || w.month != maskMonth {
			maskYear, maskMonth, days = w.year, w.month, e.dayMask(w.year, w.month)
		}
		d := nextBit(uint64(days), w.day)
		if d < 0 {
			if w.month == 12 {
				w = wall{year: w.year + 1, month: 1, day: 1}
			} else {
				w = wall{year: w.year, month: w.month + 1, day: 1}
			}
			continue
		}
		if d != w.day {
			w = wall{year: w.year, month: w.month, day: d}
		}
		h := nextBit(uint64(e.hours), w.hour)
		if h < 0 {
			// The day after; a day past the month's end finds no day above.
			w = wall{year: w.year, month: w.month, day: w.day + 1}
			continue
		}
		if h != w.hour {
			w.hour, w.minute, w.second = h, 0, 0
		}
		mi := nextBit(e.minutes, w.minute)
		if mi < 0 {
			w.hour, w.minute, w.second = w.hour+1, 0, 0
			continue
		}
		if mi != w.minute {
			w.minute, w.second = mi, 0
		}
		s := nextBit(e.seconds, w.second)
		if s < 0 {
			w.minute, w.second = w.minute+1, 0
			continue
		}
		w.second = s
		return w.naive(), true
	}
}

// matchesWall reports whether the wall time (naive seconds) matches every
// field, leaving daylight saving aside.
func (e *Expression) matchesWall(n int64) bool {
	w := wallOf(n)
	return e.years.has(w.year-MinYear) &&
		e.months&(1<<w.month) != 0 &&
		e.dayMask(w.year, w.month)&(1<<w.day) != 0 &&
		e.hours&(1<<w.hour) != 0 &&
		e.minutes&(1<<w.minute) != 0 &&
		e.seconds&(1<<w.second) != 0
}

// everySeventh has bits 1, 8, 15, 22, 29: shifted left by d-1 it marks
// day d and every seventh day after it.
const everySeventh uint64 = 1<<1 | 1<<8 | 1<<15 | 1<<22 | 1<<29

// dayMask returns the days (bit d for day d) of month m of year y that
// the day-of-month or day-of-week field selects.
func (e *Expression) dayMask(y, m int) uint32 {
	last := daysIn(y, m)
	valid := uint32(1)<<(last+1) - 2 // days 1..last
	first := weekdayOfDays(daysFromCivil(y, m, 1))
	if e.byWeek {
		switch e.weekKind {
		case weekLast:
			d := firstWeekday(bits.TrailingZeros8(e.daysOfWeek), first)
			return 1 << (d + (last-d)/7*7)
		case weekNth:
			d := firstWeekday(bits.TrailingZeros8(e.daysOfWeek), first) + 7*(int(e.nth)-1)
			if d > last {
				return 0
			}
			return 1 << d
		}
		var mask uint64
		for dow := e.daysOfWeek; dow != 0; dow &= dow - 1 {
			mask |= everySeventh << (firstWeekday(bits.TrailingZeros8(dow), first) - 1)
		}
		return uint32(mask) & valid
	}
	mask := e.daysOfMonth & valid
	for set := e.lastDays; set != 0; set &= set - 1 {
		if d := last - bits.TrailingZeros32(set); d >= 1 {
			mask |= 1 << d
		}
	}
	for set := e.nearestWeekdays; set != 0; set &= set - 1 {
		if d := bits.TrailingZeros32(set); d <= last {
			mask |= 1 << nearestWeekday(d, last, first)
		}
	}
	for set := e.lastWeekdays; set != 0; set &= set - 1 {
		if d := last - bits.TrailingZeros32(set); d >= 1 {
			mask |= 1 << nearestWeekday(d, last, first)
		}
	}
	return mask
}

// firstWeekday returns the first day of a month that falls on weekday dow
// (1 = Sunday … 7 = Saturday), given the weekday of the 1st (0 = Sunday).
func firstWeekday(dow, first int) int {
	return 1 + (dow-1-first+7)%7
}

// nearestWeekday returns the Monday-to-Friday day nearest day d of a month
// with last days whose 1st falls on weekday first (0 = Sunday), without
// leaving the month: a Saturday moves back to Friday unless it is the 1st
// (then on to Monday the 3rd), a Sunday moves on to Monday unless it is the
// last day (then back to Friday).
func nearestWeekday(d, last, first int) int {
	switch (first + d - 1) % 7 {
	case 6: // Saturday
		if d == 1 {
			return 3
		}
		return d - 1
	case 0: // Sunday
		if d == last {
			return d - 2
		}
		return d + 1
	}
	return d
}

// nextBit returns the lowest set bit ≥ from in mask, or -1.
func nextBit(mask uint64, from int) int {
	if from >= 64 {
		return -1
	}
	m := mask >> from
	if m == 0 {
		return -1
	}
	return from + bits.TrailingZeros64(m)
}

// How a wall time maps to real instants in a zone.
const (
	wallNormal   = iota // one instant
	wallRepeated        // two: a fall-back repeats it
	wallSkipped         // none: a spring-forward gap skips it
)

// resolution is the real instants (Unix seconds) of one wall time.
type resolution struct {
	kind int
	// wallNormal: the instant. wallRepeated: the earlier one.
	// wallSkipped: the wall time read with the offset before the gap, which
	// is the instant it fires at, moved forward by the gap's length.
	first int64
	// wallRepeated: the later instant.
	second int64
	// wallRepeated, wallSkipped: the instant the offset changes.
	transition int64
	// wallRepeated: the wall time at which the repetition ends; wallSkipped:
	// the wall time at which the gap ends.
	edge int64
}

// zoneWindow bounds the offsets of any zone (they stay within ±16 hours),
// so a wall time's instants lie within zoneWindow of its naive seconds.
const zoneWindow = 16 * 3600

// resolve finds the instants of wall time n (naive seconds) in loc.
func resolve(loc *time.Location, n int64) resolution {
	if loc == time.UTC {
		return resolution{kind: wallNormal, first: n}
	}
	zt := time.Unix(n-zoneWindow, 0).In(loc)
	_, off := zt.Zone()
	_, end := zt.ZoneBounds()
	if end.IsZero() || end.Unix() > n+zoneWindow {
		// One offset covers every instant this wall time could be.
		return resolution{kind: wallNormal, first: n - int64(off)}
	}
	// List the zone periods that meet the window: period i runs from
	// ends[i-1] to ends[i] (open at either end of the list) at offs[i].
	var offs [4]int64
	var ends [4]int64
	k := 0
	offs[0] = int64(off)
	for {
		if end.IsZero() || end.Unix() > n+zoneWindow || k == len(offs)-1 {
			ends[k] = math.MaxInt64
			break
		}
		ends[k] = end.Unix()
		zt = end.In(loc)
		_, off = zt.Zone()
		_, end = zt.ZoneBounds()
		k++
		offs[k] = int64(off)
	}
	var sols [2]int64
	var at [2]int // the period of each solution
	found := 0
	for i := 0; i <= k && found < 2; i++ {
		u := n - offs[i]
		if (i == 0 || u >= ends[i-1]) && u < ends[i] {
			sols[found], at[found] = u, i
			found++
		}
	}
	switch found {
	case 1:
		return resolution{kind: wallNormal, first: sols[0]}
	case 2:
		t := ends[at[0]]
		return resolution{kind: wallRepeated, first: sols[0], second: sols[1],
			transition: t, edge: t + offs[at[0]]}
	}
	for i := 0; i < k; i++ {
		t := ends[i]
		if t+offs[i] <= n && n < t+offs[i+1] {
			return resolution{kind: wallSkipped, first: n - offs[i], transition: t, edge: t + offs[i+1]}
		}
	}
	// Unreachable with real zone data; read the wall time with the first
	// offset rather than fail.
	return resolution{kind: wallNormal, first: n - offs[0]}
}

// MatchesWall reports whether the wall-clock second of t, read in the
// expression's zone, is one the expression names, leaving the
// daylight-saving rules of Next and Matches aside: both passes of an hour a
// fall-back repeats match, and a time a spring-forward gap skips never
// occurs. Exclusion calendars use it, since they exclude stretches of the
// wall clock rather than fire once.
func (e *Expression) MatchesWall(t time.Time) bool {
	lt := t.In(e.loc)
	y, mo, d := lt.Date()
	h, mi, s := lt.Clock()
	if y < MinYear || y > MaxYear {
		return false
	}
	return e.matchesWall(wall{year: y, month: int(mo), day: d, hour: h, minute: mi, second: s}.naive())
}

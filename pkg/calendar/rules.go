package calendar

import (
	"sort"
	"time"

	"github.com/taskd/taskd/pkg/cron"
)

const day = 24 * time.Hour

// forever is a span longer than any search: it stands for "excluded from
// here on" and still leaves time.Time arithmetic far from overflow.
const forever = 200 * 365 * day

// horizonDay is the last local date a search can need to look at: the
// horizon's date in any zone is at most this.
var horizonDay = floorDiv(horizon.Unix(), 86400) + 1

// rule is one calendar's own exclusion, read in its zone.
type rule struct {
	loc  *time.Location
	kind kind
}

// wall is an instant as the zone's clock shows it.
type wall struct {
	at  time.Time     // the instant itself
	day int64         // local date, in days since 1970-01-01
	tod time.Duration // local time of day, [0, 24h)
}

func read(t time.Time, loc *time.Location) wall {
	_, offset := t.In(loc).Zone()
	secs := t.Unix() + int64(offset)
	d := floorDiv(secs, 86400)
	return wall{at: t, day: d, tod: time.Duration(secs-d*86400)*time.Second + time.Duration(t.Nanosecond())}
}

// kind is the rule of one calendar kind, on wall readings.
type kind interface {
	excludes(w wall) bool
	// span is called on an excluded reading w and returns d > 0 such that
	// every reading from w up to w+d on a clock that does not change
	// offset is excluded too. Longer is better (fewer steps); it must
	// never reach past an included reading.
	span(w wall) time.Duration
}

func (r *rule) excludes(t time.Time) bool { return r.kind.excludes(read(t, r.loc)) }

// runEnd returns the first instant after t, which r excludes, that r does
// not exclude, or an instant at or past limit if there is none before it,
// or where it stopped when *budget ran out (each step costs one).
// Within one zone offset the wall clock runs with real time, so the rule's
// span can be taken in one step; at an offset change the walk stops and
// reads the clock afresh (it may have jumped forwards or back).
func (r *rule) runEnd(t, limit time.Time, budget *int) time.Time {
	w := read(t, r.loc)
	for t.Before(limit) && *budget > 0 {
		*budget--
		next := t.Add(r.kind.span(w))
		if change := zoneChange(t, r.loc); !change.IsZero() && change.Before(next) {
			next = change
		}
		t = next
		w = read(t, r.loc)
		if !r.kind.excludes(w) {
			return t
		}
	}
	return t
}

// zoneChange returns an instant after t up to which loc keeps t's offset
// (it may change there, or the zone data may only say no more than that),
// or the zero time if loc never changes offset after t.
func zoneChange(t time.Time, loc *time.Location) time.Time {
	_, end := t.In(loc).ZoneBounds()
	if end.IsZero() || end.After(t) {
		return end
	}
	// Past the end of its table a zone's offsets are worked out year by
	// year from its rule, and in a leap year ZoneBounds ends the year's
	// last period on 31 December (UTC) instead of 1 January: an "end" at
	// or before t. Look from the new year instead, and search for the
	// change if there is one before it.
	_, offset := t.In(loc).Zone()
	lo, hi := t.Unix(), time.Date(t.UTC().Year()+1, time.January, 1, 0, 0, 0, 0, time.UTC).Unix()
	if _, o := time.Unix(hi, 0).In(loc).Zone(); o == offset {
		return time.Unix(hi, 0)
	}
	for hi-lo > 1 { // offsets change on whole seconds
		mid := lo + (hi-lo)/2
		if _, o := time.Unix(mid, 0).In(loc).Zone(); o == offset {
			lo = mid
		} else {
			hi = mid
		}
	}
	return time.Unix(hi, 0)
}

// spanToDay is the wall time from w to the midnight that starts local date
// d (> w.day).
func spanToDay(w wall, d int64) time.Duration {
	if d-w.day > int64(forever/day) {
		return forever
	}
	return time.Duration(d-w.day)*day - w.tod
}

// dayKind is a kind that excludes whole local dates.
type dayKind interface {
	excludedDay(d int64) bool
	// freeAfter returns the first date after d that is not excluded, or
	// one past horizonDay if there is none up to it.
	freeAfter(d int64) int64
}

// scanFree is freeAfter by looking at each date in turn: the runs of
// weekly, monthly and annual calendars that leave any date free are short
// (at most about eight years, for one that leaves only 29 February).
func scanFree(k dayKind, d int64) int64 {
	d++
	for d <= horizonDay && k.excludedDay(d) {
		d++
	}
	return d
}

// byDay adapts a dayKind: a reading is excluded when its date is, and a
// run lasts until the midnight of the next date that is not.
type byDay struct {
	days   dayKind
	always bool // every date is excluded
}

func (k byDay) excludes(w wall) bool { return k.always || k.days.excludedDay(w.day) }

func (k byDay) span(w wall) time.Duration {
	if k.always {
		return forever
	}
	return spanToDay(w, k.days.freeAfter(w.day))
}

// excludesEveryDay reports whether k leaves no date free in 2000-2007: a
// weekly, monthly or annual pattern that does excludes every date there is
// (eight years hold every weekday, month length and leap day).
func excludesEveryDay(k dayKind) bool {
	from := daysFromCivil(2000, time.January, 1)
	to := daysFromCivil(2008, time.January, 1)
	for d := from; d < to; d++ {
		if !k.excludedDay(d) {
			return false
		}
	}
	return true
}

// dates excludes listed dates.
type dates []int64 // sorted, unique

func (k dates) excludedDay(d int64) bool {
	i := sort.Search(len(k), func(i int) bool { return k[i] >= d })
	return i < len(k) && k[i] == d
}

// freeAfter skips the run of consecutive listed dates that d is in.
func (k dates) freeAfter(d int64) int64 {
	i := sort.Search(len(k), func(i int) bool { return k[i] >= d })
	for i < len(k) && k[i] == d {
		i++
		d++
	}
	return d
}

// annual excludes a month and day every year.
type annual [13][32]bool

func (k *annual) excludedDay(d int64) bool {
	_, m, dd := civilFromDays(d)
	return k[m][dd]
}

func (k *annual) freeAfter(d int64) int64 { return scanFree(k, d) }

// monthly excludes days of the month, and the last day if last is set.
type monthly struct {
	days [32]bool
	last bool
}

func (k *monthly) excludedDay(d int64) bool {
	y, m, dd := civilFromDays(d)
	return k.days[dd] || k.last && dd == daysIn(y, m)
}

func (k *monthly) freeAfter(d int64) int64 { return scanFree(k, d) }

// weekly excludes days of the week, indexed by time.Weekday.
type weekly [7]bool

func (k *weekly) excludedDay(d int64) bool { return k[weekday(d)] }

func (k *weekly) freeAfter(d int64) int64 { return scanFree(k, d) }

// daily excludes the local times of day in [start, end), or with invert
// those outside it.
type daily struct {
	start, end time.Duration // 0 <= start < end <= 24h
	invert     bool
}

func (k daily) excludes(w wall) bool {
	inside := w.tod >= k.start && w.tod < k.end
	return inside != k.invert
}

func (k daily) span(w wall) time.Duration {
	switch {
	case !k.invert && k.start == 0 && k.end == day:
		return forever
	case !k.invert:
		return k.end - w.tod
	case w.tod < k.start:
		return k.start - w.tod
	default: // at or after end: through midnight to start
		return day - w.tod + k.start
	}
}

// cronKind excludes the seconds an expression matches. A cron expression
// is a product of independent fields, so whether every second of a
// matching minute matches is a property of the expression, the same for
// every minute; likewise every minute of a matching hour and every hour of
// a matching day. Compile finds these out once, and a run is then walked
// in the largest unit that matches whole.
type cronKind struct {
	expr                             *cron.Expression
	wholeMinute, wholeHour, wholeDay bool
}

func (k *cronKind) excludes(w wall) bool { return k.expr.MatchesWall(w.at) }

func (k *cronKind) span(w wall) time.Duration {
	switch {
	case k.wholeDay:
		return day - w.tod
	case k.wholeHour:
		return time.Hour - w.tod%time.Hour
	case k.wholeMinute:
		return time.Minute - w.tod%time.Minute
	default:
		return time.Second - w.tod%time.Second
	}
}

// newCronKind probes e on a matching local day with one offset throughout
// (so every wall time of it exists once) for the units it matches whole.
// If it finds no such day in a few tries the walk goes second by second,
// which is slower and as exact.
func newCronKind(e *cron.Expression, loc *time.Location) *cronKind {
	k := &cronKind{expr: e}
	after := time.Date(1970, time.January, 1, 0, 0, 0, 0, loc)
	for range 16 {
		f, ok := e.Next(after)
		if !ok {
			return k
		}
		y, m, d := f.In(loc).Date()
		midnight := time.Date(y, m, d, 0, 0, 0, 0, loc)
		after = f.Add(day)
		begin, _ := f.In(loc).ZoneBounds()
		end := zoneChange(f, loc)
		steady := read(midnight, loc).tod == 0 &&
			(begin.IsZero() || !begin.After(midnight)) &&
			(end.IsZero() || !end.Before(midnight.Add(day)))
		if !steady || !e.MatchesWall(f) {
			continue
		}
		tod := read(f, loc).tod.Truncate(time.Second)
		hour := midnight.Add(tod.Truncate(time.Hour))
		minute := midnight.Add(tod.Truncate(time.Minute))
		k.wholeMinute = matchesAll(e, minute, 60, time.Second)
		k.wholeHour = k.wholeMinute && matchesAll(e, hour, 60, time.Minute)
		k.wholeDay = k.wholeHour && matchesAll(e, midnight, 24, time.Hour)
		return k
	}
	return k
}

func matchesAll(e *cron.Expression, from time.Time, n int, step time.Duration) bool {
	for i := range n {
		if !e.MatchesWall(from.Add(time.Duration(i) * step)) {
			return false
		}
	}
	return true
}

// Civil date arithmetic on day numbers (days since 1970-01-01), proleptic
// Gregorian, after the well-known days-from-civil algorithm.

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func daysFromCivil(y int, m time.Month, d int) int64 {
	yy := int64(y)
	if m <= time.February {
		yy--
	}
	era := floorDiv(yy, 400)
	yoe := yy - era*400
	mp := (int64(m) + 9) % 12
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func civilFromDays(z int64) (int, time.Month, int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	y := yoe + era*400
	if m <= 2 {
		y++
	}
	return int(y), time.Month(m), int(d)
}

func weekday(d int64) time.Weekday {
	w := (d + 4) % 7 // 1970-01-01 was a Thursday
	if w < 0 {
		w += 7
	}
	return time.Weekday(w)
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y int, m time.Month) int {
	switch m {
	case time.February:
		if isLeap(y) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

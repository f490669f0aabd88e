// Package cron parses and evaluates Quartz cron expressions in an IANA time
// zone.
//
// An expression has six or seven fields separated by spaces or tabs:
// seconds, minutes, hours, day-of-month, month, day-of-week and an optional
// year, with Quartz's meaning for every field and for the special
// characters * , - / ? L W # (day-of-week 1 = Sunday … 7 = Saturday). The
// user documentation, with the daylight-saving rules, is docs/cron.md.
//
// Fire times are found in the wall-clock time of the expression's zone and
// returned in UTC. Across daylight-saving changes:
//
//   - a wall time that a spring-forward gap skips fires once, moved forward
//     by the length of the gap (02:30 in a gap from 02:00 to 03:00 fires at
//     03:30); when the moved time is also a fire time of its own, the two
//     are one fire;
//   - a wall time that a fall-back repeats fires once, at its first
//     occurrence, when the hours field names fixed hours; when the hours
//     field is * or a step, it fires at both occurrences, so an hourly
//     expression fires at every real hour.
//
// Fire times strictly increase: Next never returns an instant twice, and
// Matches is true exactly for the instants Next can return.
//
// An Expression is immutable after Parse and safe for concurrent use.
package cron

import (
	"fmt"
	"math/bits"
	"time"

	// Zones must load on machines without a zoneinfo database.
	_ "time/tzdata"
)

// The years an expression can name, and the last year Next searches.
const (
	MinYear = 1970
	MaxYear = 2099
)

// Expression is a parsed cron expression bound to a time zone. The field
// sets are bitmasks, so evaluating it allocates nothing.
type Expression struct {
	expr string
	loc  *time.Location

	seconds uint64 // bit s: second s (0-59)
	minutes uint64 // bit m: minute m (0-59)
	years   bitset // bit y-MinYear: year y

	hours uint32 // bit h: hour h (0-23)

	// Day-of-month, used when byWeek is false. A day fires if any of
	// these sets names it.
	daysOfMonth     uint32 // bit d: day d (1-31)
	lastDays        uint32 // bit n: "L-n", n days before the last day ("L" is n = 0)
	lastWeekdays    uint32 // bit n: "L-nW", the weekday nearest the day n before the last ("LW" is n = 0)
	nearestWeekdays uint32 // bit d: "dW", the weekday nearest day d

	months uint16 // bit m: month m (1-12)

	// Day-of-week, used when byWeek is true.
	daysOfWeek uint8 // bit w: weekday w, 1 = Sunday … 7 = Saturday
	weekKind   weekKind
	nth        uint8 // for weekNth: which occurrence (1-5)

	byWeek    bool // day-of-month is "?": days are chosen by day-of-week
	fixedHour bool // the hours field names hours (neither * nor a step)
}

// weekKind says how daysOfWeek picks days.
type weekKind uint8

const (
	weekEvery weekKind = iota // every such weekday
	weekLast                  // "nL": the last such weekday of the month (one weekday)
	weekNth                   // "n#k": the k-th such weekday of the month (one weekday)
)

// bitset is a set of small non-negative integers; it holds the years
// (bit y-MinYear) and, while parsing, every field's values (bit v-min).
type bitset [(MaxYear - MinYear + 64) / 64]uint64

func (s *bitset) set(i int) { s[i/64] |= 1 << (i % 64) }

func (s *bitset) has(i int) bool {
	return i >= 0 && i < len(s)*64 && s[i/64]&(1<<(i%64)) != 0
}

// next returns the first member ≥ i, or ok = false when there is none.
func (s *bitset) next(i int) (int, bool) {
	if i < 0 {
		i = 0
	}
	for i < len(s)*64 {
		if w := s[i/64] >> (i % 64); w != 0 {
			return i + bits.TrailingZeros64(w), true
		}
		i = (i/64 + 1) * 64
	}
	return 0, false
}

// MaxLen is the longest expression Parse accepts, in bytes. Listing every
// value of every field one by one, years included, takes about 1,200.
const MaxLen = 2048

// MaxZoneLen is the longest time zone name the schedules and calendars
// that read an expression accept, in bytes (the longest IANA name has 32).
const MaxZoneLen = 64

// Parse compiles a Quartz cron expression read in loc (nil = UTC). It
// returns a *SyntaxError naming the field and position of the first
// problem when expr is not an expression Quartz accepts (see docs/cron.md
// for the few forms Quartz tolerates and this package rejects).
func Parse(expr string, loc *time.Location) (*Expression, error) {
	if len(expr) > MaxLen {
		// Checked before anything reads it: a task or calendar stores the
		// expression, and parses are cached (docs/limits.md).
		return nil, &SyntaxError{Field: "expression", Pos: 1,
			Msg: fmt.Sprintf("is %d bytes, the limit is %d", len(expr), MaxLen)}
	}
	if loc == nil {
		loc = time.UTC
	}
	e, err := parse(expr)
	if err != nil {
		return nil, err
	}
	e.loc = loc
	return e, nil
}

// String returns the expression exactly as it was given to Parse.
func (e *Expression) String() string { return e.expr }

// Location returns the time zone the expression is read in (UTC when Parse
// was given nil).
func (e *Expression) Location() *time.Location { return e.loc }

// FixedHour reports whether the hours field names fixed hours, that is it
// has neither * nor a step. It decides how a wall time that a fall-back
// repeats fires: once (fixed hours) or at both occurrences.
func (e *Expression) FixedHour() bool { return e.fixedHour }

// SyntaxError is the error Parse returns for an expression it rejects.
type SyntaxError struct {
	// Field is "seconds", "minutes", "hours", "day-of-month", "month",
	// "day-of-week", "year", or "expression" for a problem with the
	// expression as a whole (such as the number of fields).
	Field string
	// Pos is the 1-based position, in characters, of the problem in the
	// expression.
	Pos int
	// Msg says what is wrong.
	Msg string
}

// Error names the field and the position, then the problem.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at position %d: %s", e.Field, e.Pos, e.Msg)
}

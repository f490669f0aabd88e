// Package cron is a TEMPORARY stand-in with the API of the real cron
// package, so that pkg/calendar compiles and tests before that package
// lands. It understands only what the calendar tests use: six or seven
// fields of plain numbers, '*', '?', ranges a-b, lists a,b and day-of-week
// names SUN-SAT. Replace this file with the real package when merging.
package cron

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SyntaxError says where an expression is malformed.
type SyntaxError struct {
	Field string
	Pos   int
	Msg   string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s field at %d: %s", e.Field, e.Pos, e.Msg)
}

// Expression is a parsed expression read in one time zone.
type Expression struct {
	loc    *time.Location
	fields [7]uint64 // bit v set: value v allowed
}

var fieldNames = [7]string{"seconds", "minutes", "hours", "day-of-month", "month", "day-of-week", "year"}
var fieldRange = [7][2]int{{0, 59}, {0, 59}, {0, 23}, {1, 31}, {1, 12}, {1, 7}, {1970, 2099}}
var dayNames = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}

// Parse reads a six- or seven-field expression in loc.
func Parse(expr string, loc *time.Location) (*Expression, error) {
	parts := strings.Fields(expr)
	if len(parts) != 6 && len(parts) != 7 {
		return nil, &SyntaxError{Field: "expression", Msg: "needs 6 or 7 fields"}
	}
	e := &Expression{loc: loc}
	for i := range 7 {
		if i == 6 && len(parts) == 6 {
			e.fields[6] = 0 // any year: checked in yearOK
			continue
		}
		for item := range strings.SplitSeq(parts[i], ",") {
			if item == "*" || item == "?" {
				e.fields[i] = ^uint64(0)
				continue
			}
			lo, hi, ok := strings.Cut(item, "-")
			a, err := value(i, lo)
			if err != nil {
				return nil, &SyntaxError{Field: fieldNames[i], Msg: err.Error()}
			}
			b := a
			if ok {
				if b, err = value(i, hi); err != nil {
					return nil, &SyntaxError{Field: fieldNames[i], Msg: err.Error()}
				}
			}
			if b < a {
				return nil, &SyntaxError{Field: fieldNames[i], Msg: "range ends before it starts"}
			}
			for v := a; v <= b; v++ {
				e.fields[i] |= 1 << uint(v-fieldRange[i][0])
			}
		}
	}
	return e, nil
}

func value(field int, s string) (int, error) {
	if field == 5 {
		if v, ok := dayNames[s]; ok {
			return v, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < fieldRange[field][0] || v > fieldRange[field][1] {
		return 0, fmt.Errorf("%q is not a value of the field", s)
	}
	return v, nil
}

func (e *Expression) has(field, v int) bool {
	return e.fields[field]&(1<<uint(v-fieldRange[field][0])) != 0
}

func (e *Expression) dayOK(w time.Time) bool {
	y := w.Year()
	if e.fields[6] != 0 && (y < 1970 || y > 2099 || !e.has(6, y)) {
		return false
	}
	return e.has(4, int(w.Month())) && e.has(3, w.Day()) && e.has(5, int(w.Weekday())+1)
}

// Matches reports whether the second containing t matches.
func (e *Expression) Matches(t time.Time) bool {
	w := t.In(e.loc)
	return e.dayOK(w) && e.has(2, w.Hour()) && e.has(1, w.Minute()) && e.has(0, w.Second())
}

// Next returns the first matching second strictly after after, searching
// five years ahead.
func (e *Expression) Next(after time.Time) (time.Time, bool) {
	t := after.Truncate(time.Second).Add(time.Second)
	limit := t.AddDate(5, 0, 0)
	for t.Before(limit) {
		w := t.In(e.loc)
		sec := time.Duration(w.Second()) * time.Second
		min := time.Duration(w.Minute()) * time.Minute
		next := t.Add(time.Second)
		switch {
		case !e.dayOK(w):
			next = time.Date(w.Year(), w.Month(), w.Day()+1, 0, 0, 0, 0, e.loc)
		case !e.has(2, w.Hour()):
			next = t.Add(time.Hour - min - sec)
		case !e.has(1, w.Minute()):
			next = t.Add(time.Minute - sec)
		case !e.has(0, w.Second()):
		default:
			return t, true
		}
		if !next.After(t) { // a midnight inside a gap resolved backwards
			next = t.Add(time.Second)
		}
		t = next
	}
	return time.Time{}, false
}

// Package calendar is the time arithmetic of named exclusion calendars: which
// instants a calendar excludes, and the first instant at or after a given one
// that a set of calendars leaves free. It is pure: no clock, no storage;
// callers pass calendars in and look bases up through a function.
//
// Every kind of calendar is read on the local wall clock of its time zone:
// an instant is excluded when its local date, its local time of day or its
// local second (for cron) is. A day is therefore whatever stretch of real
// time the zone's clock shows that date for: 23 or 25 hours on a
// daylight-saving day, starting at 01:00 where midnight does not exist.
//
// A calendar with a base excludes what it excludes itself or what its base
// excludes, each read in its own zone; bases chain. A Set, the calendars a
// task lists, excludes what any of its members excludes.
package calendar

import (
	"fmt"
	"strings"
	"time"
	// Zones resolve from the binary, the same on every node whatever the
	// host's zone files say.
	_ "time/tzdata"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// MaxChain is the most calendars one chain may hold: a calendar and its
// bases, its base's base and so on.
const MaxChain = 16

// horizon is where searching for an included instant stops: nothing that
// schedules by calendar looks past it (cron years end in 2099).
var horizon = time.Date(2100, time.January, 1, 0, 0, 0, 0, time.UTC)

// maxSteps bounds NextIncluded's work, counted in steps of the walk over
// excluded runs (a step takes well under a microsecond). Calendars that
// each leave time free but between them exclude everything for days on
// end, alternating at second granularity, are the only way to reach it;
// NextIncluded then answers ok=false.
const maxSteps = 1 << 18

// Lookup finds a stored calendar by name.
type Lookup func(name string) (*taskdv1.Calendar, bool)

// Calendar is a compiled calendar with its base chain resolved. It is
// immutable and safe for concurrent use.
type Calendar struct {
	name  string
	rules []*rule // this calendar's own rule first, then each base's in chain order
}

// Compile checks c, resolves its base chain through lookup, and returns the
// calendar ready for arithmetic. An error is a *FieldError: one on
// "calendar..." naming what is wrong in c itself, or one on "calendar.base"
// when a base does not exist, the chain comes back to a calendar already in
// it, or holds more than MaxChain calendars. A base that lookup returns but
// that does not compile (it was stored by a different release, say) is
// reported on "calendar.base" too. The name c has wins over a stored
// calendar of the same name: the chain is checked as it will be once c is
// stored.
func Compile(c *taskdv1.Calendar, lookup Lookup) (*Calendar, error) {
	own, err := build("calendar", c)
	if err != nil {
		return nil, err
	}
	out := &Calendar{name: c.GetName(), rules: []*rule{own}}
	chain := []string{c.GetName()}
	for base := c.GetBase(); base != ""; {
		for _, seen := range chain {
			if seen == base {
				return nil, &FieldError{Field: "calendar.base",
					Reason: "makes a cycle: " + strings.Join(append(chain, base), " → ")}
			}
		}
		if len(chain) == MaxChain {
			return nil, &FieldError{Field: "calendar.base",
				Reason: fmt.Sprintf("chain %s is longer than %d calendars", strings.Join(append(chain, base), " → "), MaxChain)}
		}
		var stored *taskdv1.Calendar
		var ok bool
		if lookup != nil {
			stored, ok = lookup(base)
		}
		if !ok || stored == nil {
			return nil, &FieldError{Field: "calendar.base", Reason: missing(chain, base)}
		}
		r, err := build("calendar", stored)
		if err != nil {
			return nil, &FieldError{Field: "calendar.base",
				Reason: fmt.Sprintf("calendar %q in the chain is not valid: %v", base, err)}
		}
		if stored.GetName() != base {
			return nil, &FieldError{Field: "calendar.base",
				Reason: fmt.Sprintf("looking up %q found a calendar named %q", base, stored.GetName())}
		}
		out.rules = append(out.rules, r)
		chain = append(chain, base)
		base = stored.GetBase()
	}
	return out, nil
}

func missing(chain []string, base string) string {
	if len(chain) == 1 {
		return fmt.Sprintf("calendar %q does not exist", base)
	}
	return fmt.Sprintf("calendar %q (base of %q) does not exist", base, chain[len(chain)-1])
}

// Uses returns the names of the calendars c refers to directly: its base,
// if it has one. A calendar that is used cannot be deleted.
func Uses(c *taskdv1.Calendar) []string {
	if c.GetBase() == "" {
		return nil
	}
	return []string{c.GetBase()}
}

// Name returns the calendar's name.
func (c *Calendar) Name() string { return c.name }

// Excludes reports whether this calendar or any calendar in its base chain
// excludes the instant t.
func (c *Calendar) Excludes(t time.Time) bool {
	for _, r := range c.rules {
		if r.excludes(t) {
			return true
		}
	}
	return false
}

// NextIncluded returns the smallest instant t' ≥ t that no calendar in the
// chain excludes, in t's location; t itself if it is not excluded.
// Otherwise the search covers instants before 2100-01-01T00:00:00Z: ok is
// false when everything from t up to then is excluded (or t is not before
// then).
func (c *Calendar) NextIncluded(t time.Time) (time.Time, bool) {
	return Set{c}.NextIncluded(t)
}

// Set is the calendars a task lists: an instant is excluded if any of them
// (or any of their bases) excludes it. The zero Set excludes nothing.
type Set []*Calendar

// Excludes reports whether any calendar of the set excludes t.
func (s Set) Excludes(t time.Time) bool {
	for _, c := range s {
		if c.Excludes(t) {
			return true
		}
	}
	return false
}

// NextIncluded returns the smallest instant t' ≥ t that no calendar of the
// set excludes, with the same bounds as Calendar.NextIncluded. It jumps
// over whole excluded runs (days, windows, matching cron units), so its
// cost grows with the number of runs crossed, not with their length.
func (s Set) NextIncluded(t time.Time) (time.Time, bool) {
	at := t.Round(0) // instants only: a monotonic reading means nothing here
	budget := maxSteps
	for {
		moved := false
		for _, c := range s {
			for _, r := range c.rules {
				if !r.excludes(at) {
					continue
				}
				if !at.Before(horizon) || budget <= 0 {
					return time.Time{}, false
				}
				at = r.runEnd(at, horizon, &budget)
				moved = true
			}
		}
		if !moved {
			return at.In(t.Location()), true
		}
		if !at.Before(horizon) {
			return time.Time{}, false
		}
	}
}

// Package schedule is the time arithmetic of triggers: the fire times a
// trigger makes, what a late fire time becomes under a misfire policy, and
// retry backoff. It is pure: callers pass the clock's reading in.
//
// A trigger's progress is a time: its next fire time. The fire time after
// that is computed from it (Next), so progress survives restarts and moves
// as one timestamp with no drift, and every kind of trigger, cron included,
// advances the same way. Calendars (Exclusions) remove fire times; an
// excluded fire time is skipped, never misfired.
package schedule

import _ "time/tzdata" // cron and calendar zones load on hosts without a zoneinfo database

package taskservice

import (
	"fmt"
	"time"

	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// timingLocked is the timing a plan of rec reads on this node now (n.mu
// held).
func (n *Node) timingLocked(rec *storev1.TaskRecord, now time.Time) timing {
	return timing{
		now:           now,
		dispatchStart: n.dispatchStart,
		threshold:     n.cfg.MisfireThreshold,
		maxCatchUp:    n.cfg.MaxCatchUp,
		cals:          n.calendarsOf(rec.GetSpec().GetCalendars()),
	}
}

// timing is timingLocked for a caller not holding n.mu.
func (n *Node) timing(rec *storev1.TaskRecord, now time.Time) timing {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.timingLocked(rec, now)
}

// calendarsOf is the exclusions of the named calendars (nil for none).
func (n *Node) calendarsOf(names []string) schedule.Exclusions {
	if len(names) == 0 {
		return nil
	}
	return nil // calendars: wired when the calendar registry lands
}

// validateCalendarRefs checks the calendars a task lists: at most
// MaxCalendarsPerTask, no repeats, each stored now (the schedule Txn also
// compares that each still exists).
func (n *Node) validateCalendarRefs(field string, names []string) error {
	if len(names) > MaxCalendarsPerTask {
		return invalid(field, "lists %d calendars, the limit is %d", len(names), MaxCalendarsPerTask)
	}
	seen := map[string]bool{}
	for i, name := range names {
		if seen[name] {
			return invalid(fmt.Sprintf("%s[%d]", field, i), "calendar %q is listed twice", name)
		}
		seen[name] = true
		return &UnimplementedError{Field: fmt.Sprintf("%s[%d]", field, i), Reason: "calendars arrive with the calendar registry"}
	}
	return nil
}

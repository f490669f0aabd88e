package taskservice

import (
	"time"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// timingLocked is the timing a plan of rec reads on this node now (n.mu
// held).
func (n *Node) timingLocked(rec *storev1.TaskRecord, now time.Time) record.Timing {
	return record.Timing{
		Now:           now,
		DispatchStart: n.dispatchStart,
		Threshold:     n.cfg.MisfireThreshold,
		MaxCatchUp:    n.cfg.MaxCatchUp,
		Calendars:     n.cals.Exclusions(rec.GetSpec().GetCalendars()),
	}
}

// timing is timingLocked for a caller not holding n.mu.
func (n *Node) timing(rec *storev1.TaskRecord, now time.Time) record.Timing {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.timingLocked(rec, now)
}

// entryTimingLocked is timingLocked for a start of e: with the instant
// before which e's fire times are caught up (takeover.go), the later of
// e's take-over and, for a task created before it, this node's dispatch
// start. n.mu held.
func (n *Node) entryTimingLocked(e *held.Entry, rec *storev1.TaskRecord, now time.Time) record.Timing {
	tm := n.timingLocked(rec, now)
	tm.TakenAt = e.Ex().TakenAt.Time()
	if rec.GetCreatedAt().AsTime().Before(n.dispatchStart) {
		tm.TakenAt = maxTime(tm.TakenAt, n.dispatchStart)
	}
	return tm
}

package dispatch

import (
	"time"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// TimingLocked is the timing a plan of rec reads on this node now (n.mu
// held).
func (n *Dispatcher) TimingLocked(rec *storev1.TaskRecord, now time.Time) record.Timing {
	return record.Timing{
		Now:           now,
		DispatchStart: n.Phase.DispatchStart,
		Threshold:     n.cfg.MisfireThreshold,
		MaxCatchUp:    n.cfg.MaxCatchUp,
		Calendars:     n.Cals.Exclusions(rec.GetSpec().GetCalendars()),
	}
}

// Timing is TimingLocked for a caller not holding n.mu.
func (n *Dispatcher) Timing(rec *storev1.TaskRecord, now time.Time) record.Timing {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.TimingLocked(rec, now)
}

// EntryTimingLocked is TimingLocked for a start of e: with the instant
// before which e's fire times are caught up (takeover.go), the later of
// e's take-over and, for a task created before it, this node's dispatch
// start. n.mu held.
func (n *Dispatcher) EntryTimingLocked(e *held.Entry, rec *storev1.TaskRecord, now time.Time) record.Timing {
	tm := n.TimingLocked(rec, now)
	tm.TakenAt = e.Ex().TakenAt.Time()
	if rec.GetCreatedAt().AsTime().Before(n.Phase.DispatchStart) {
		tm.TakenAt = maxTime(tm.TakenAt, n.Phase.DispatchStart)
	}
	return tm
}

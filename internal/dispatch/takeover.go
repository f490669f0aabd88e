package dispatch

import (
	"time"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
)

// This file is catch-up after a take-over (contract §4.4): fire times of a
// task that passed while no node ran it (its owner was down, it was
// moving, this node was starting, it was paused) follow the trigger's
// misfire policy whatever --misfire-threshold says: SKIP and FIRE_ONCE_NOW
// run at most one of them, FIRE_ALL replays them up to --max-catch-up
// (schedule.CatchUp). The threshold judges only the lateness of fire times
// that came while this node held the task and could run it
// (schedule.Due).
//
// A fire time counts as caught up when it comes before the task was taken
// here: before the node began dispatching (a restart; for tasks created
// before it), or before the instant the node noted in the task's entry
// when it took the task with a fire time already past. The node notes it
// where an identity's tasks come to a new owner (InstallTasks with a newer
// epoch, calling takeLocked: the load at its start, an adoption, a move's
// pick-up) and where a pause lets an entry held back past its fire time go
// (queueAtLocked). A task scheduled here or handed over while the identity
// stays here is not taken over: its past fire times (a start given in the
// past) are late by the threshold's rule. Only entries with a past fire
// time pay for the note, in their out-of-line fields. The note reaches the
// record's state machine as record.Timing.TakenAt (EntryTimingLocked),
// which plans each due fire time by it (internal/record).

// takeLocked queues e, whose record (e.Rec) this node has just loaded as
// the identity's new owner, and notes the take-over when one of its
// triggers' fire times has already come. n.mu held.
func (n *Dispatcher) takeLocked(e *held.Entry) {
	if rec := e.Rec; rec != nil && !e.Running {
		now := time.Now()
		if _, at, ok := record.NextTrigger(rec, n.Phase.DispatchStart); ok && !at.After(now) {
			e.Extra().TakenAt = held.InstantOf(now)
		}
	}
	n.ReschedLocked(e)
}

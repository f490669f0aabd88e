package taskservice

import (
	"context"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// EventType names a step in a task's life (contract §8).
type EventType string

// The events of contract §8. For one run they come in this order: FIRED,
// then VETOED (the run does not start) or STARTED and one of SUCCEEDED |
// FAILED | DROPPED | INTERRUPTED, then one of RETRY_SCHEDULED |
// NEXT_SCHEDULED | FINALIZED.
const (
	// EventScheduled: the task was stored; on the event stream only (see
	// Config.Listeners).
	EventScheduled      EventType = "SCHEDULED"
	EventFired          EventType = "FIRED"
	EventVetoed         EventType = "VETOED"
	EventStarted        EventType = "STARTED"
	EventSucceeded      EventType = "SUCCEEDED"
	EventFailed         EventType = "FAILED"
	EventDropped        EventType = "DROPPED"
	EventInterrupted    EventType = "INTERRUPTED"
	EventRetryScheduled EventType = "RETRY_SCHEDULED"
	EventNextScheduled  EventType = "NEXT_SCHEDULED"
	EventFinalized      EventType = "FINALIZED"
	EventMisfired       EventType = "MISFIRED"
	EventCanceled       EventType = "CANCELED"
	// EventMoved: the identity left this node (moved away or unmapped).
	EventMoved EventType = "MOVED"
	// EventHandedOff: this node picked up a handoff entry.
	EventHandedOff EventType = "HANDED_OFF"
	// EventPaused and EventResumed: a pause of a task (TaskID set), an
	// identity (Identity set alone) or a kind (Kind set alone) came into
	// force or was lifted, on the node that recorded it.
	EventPaused  EventType = "PAUSED"
	EventResumed EventType = "RESUMED"
	// EventUpdated: UpdateTask replaced the task's spec.
	EventUpdated EventType = "UPDATED"
)

// Event is one step, as listeners see it.
type Event struct {
	Type      EventType
	Time      time.Time
	Node      string
	Identity  string
	TaskID    string
	Kind      string
	RunNumber int64
	Attempt   int
	Fence     Fence
	Outcome   taskdv1.Outcome
	Message   string
	// Next is the next fire time for NEXT_SCHEDULED and RETRY_SCHEDULED.
	Next time.Time
	// Count is the number of fire times a MISFIRED event stands for.
	Count int64
	// FireTime is the fire time of the run, for the events of a run
	// (FIRED to the outcome); zero for a run that has none (run-now).
	FireTime time.Time
	// Ready is when the run became due on this node, for the events of a
	// run (FIRED to the outcome): its fire or retry time, or when the node
	// queued its run-now request. STARTED's Time minus Ready is the time
	// the run waited to start (for a worker, its kind's limit, its
	// identity's earlier runs, or a proven lease).
	Ready time.Time
	// State is the task's state after the run, for NEXT_SCHEDULED,
	// RETRY_SCHEDULED and FINALIZED (DEAD: its attempts are used up).
	State taskdv1.TaskState
	// Duration is how long the handler ran, for the outcome events of a
	// run this node started (SUCCEEDED, FAILED, DROPPED, INTERRUPTED).
	Duration time.Duration
}

// Listener is told every event of the node, in order for each run. It is
// called synchronously: keep it quick. A listener that panics is logged and
// never prevents a commit (the bug Quartz had).
type Listener func(Event)

// A RunVeto is asked, after a run's FIRED event and before its handler is
// called, whether the run may start: Quartz's trigger listener veto. A
// non-empty reason vetoes the run: its handler is not called, VETOED is
// emitted, and the run is recorded with outcome VETOED and that reason as
// its message; its fire time is done (not retried). Vetoes are asked in
// the order of Config.Vetoes, the first veto wins, and they run on the
// run's own goroutine before the identity's next run is called: keep them
// quick. A veto that panics is logged and does not veto.
type RunVeto func(ctx context.Context, run *Run) (reason string)

package runs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// EventType names a step of a run (contract §8); its values are the
// public taskservice.EventType's.
type EventType string

// The events the run path emits; see taskservice.EventType.
const (
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
)

// Fence is one run's token: the identity's epoch and the task's revision
// at its start (taskservice.Fence, which converts from it).
type Fence struct {
	Epoch    int64
	Revision int64
}

// String renders the fence as "<epoch>.<revision>".
func (f Fence) String() string { return fmt.Sprintf("%d.%d", f.Epoch, f.Revision) }

// Event is one step of a run, as the node's listeners are told it
// (taskservice.Event, field by field).
type Event struct {
	Type      EventType
	Time      time.Time
	Identity  string
	TaskID    string
	Kind      string
	RunNumber int64
	Attempt   int
	Fence     Fence
	Outcome   taskdv1.Outcome
	Message   string
	Next      time.Time
	Count     int64
	FireTime  time.Time
	Ready     time.Time
	State     taskdv1.TaskState
	Duration  time.Duration
}

// emit tells the node's listeners ev.
func (n *Path) emit(ev Event) {
	if n.cfg.Emit != nil {
		n.cfg.Emit(ev)
	}
}

// ErrLeaseNotProven is what a handler returns when it could not prove, at
// the last moment before its work, that the node's lease was live
// (taskservice.ErrLeaseNotProven).
var ErrLeaseNotProven = errors.New("not started: the node could not prove that its lease was live")

// jitter is the random source of retry backoff.
func jitter() float64 { return rand.Float64() }

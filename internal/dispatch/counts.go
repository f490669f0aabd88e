package dispatch

import (
	"time"

	"github.com/taskd/taskd/internal/held"
)

// Counts are what the dispatcher holds, counted for the node's Stats (see
// taskservice.Stats for what each means).
type Counts struct {
	Identities       int
	TimerQueue       int
	Scheduled        int
	Due              int
	Running          int
	Retained         int
	Cold             int
	WaitingForLimit  map[string]int
	WaitingForWorker map[string]int
	WaitingUnserved  map[string]int
}

// CountsLocked counts what the dispatcher holds at now. It walks the
// timer queue and the identities' start queues: its cost grows with the
// tasks held. The caller holds the engine lock.
func (n *Dispatcher) CountsLocked(now time.Time) Counts {
	s := Counts{Identities: len(n.Idents), TimerQueue: len(n.Queue), Running: n.Flights.Len()}
	for _, e := range n.Queue {
		switch {
		case e.Purge:
			s.Retained++
		case e.Due.Time().After(now):
			s.Scheduled++
			if e.Cold() {
				s.Cold++
			}
		default:
			s.Due++
		}
	}
	// Cold tasks being read again before they are due.
	s.Scheduled += n.ThawingLocked()
	s.Cold += n.ThawingLocked()
	// Due entries taken off the timer queue but not started yet: waiting
	// for a worker or for their kind's limit.
	n.eachQueuedLocked(func(e *held.Entry) {
		if !e.Purge && e.Ex().OverlapOf == nil {
			s.Due++
		}
	})
	s.WaitingForLimit = n.WaitingForLimitLocked()
	for _, w := range s.WaitingForLimit {
		s.Due += w
	}
	s.WaitingUnserved = n.WaitingUnservedLocked()
	s.WaitingForWorker = n.WaitingForWorkerLocked()
	for _, w := range s.WaitingForWorker {
		s.Due += w
	}
	return s
}

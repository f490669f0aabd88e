package dispatch

import (
	"time"

	"github.com/taskd/taskd/internal/held"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file is pausing (contract §4.6): of one task (PausedAt in its
// record), of every task of an identity, and of every task of a kind in the
// cluster (a key each under keyspace.Keys.Pauses, present while the pause is
// in force). A paused task keeps its triggers; it starts no run, manual runs
// included, until resumed, and what came due meanwhile then goes through
// its misfire policy.
//
// Every node follows the pause keys (follow.Pauses, n.pauses); a due entry
// that a pause covers is parked (out of the timer queue, into n.parked) and
// put back when a pause is lifted (PauseLifted). The watch is not what
// makes a pause hold: every start Txn compares that the identity's and the
// kind's pause keys are absent, so no run starts after a PauseIdentity or
// PauseKind call returned, whatever the watch's lag. A task pause bumps the
// record's revision, which every start compares already.

// PausedByLocked says which pauses hold back rec of identity id: "task",
// "identity", "kind" (nil: none). n.mu held.
func (n *Dispatcher) PausedByLocked(rec *storev1.TaskRecord, id string) []string {
	var by []string
	if rec.GetPausedAt() != nil {
		by = append(by, "task")
	}
	return append(by, n.Pauses.By(id, rec.GetSpec().GetKind())...)
}

// parkLocked takes a paused entry out of the queue until a pause is lifted.
func (n *Dispatcher) parkLocked(e *held.Entry) {
	n.Queue.Remove(e)
	n.parked[e] = struct{}{}
}

// queueAtLocked puts e in the timer queue at at, no longer parked; purge
// says at is the end of its retention, not a fire time. An entry a pause
// held back past its fire time is taken again (takeover.go): what came due
// while it was paused is caught up by its misfire policy. n.mu held.
func (n *Dispatcher) queueAtLocked(e *held.Entry, at time.Time, purge bool) {
	_, parked := n.parked[e]
	delete(n.parked, e)
	e.Purge = purge
	n.Queue.Set(e, at)
	if now := time.Now(); parked && !purge && !at.After(now) {
		e.Extra().TakenAt = held.InstantOf(now)
	}
}

// unparkLocked puts every parked entry back: each checks again which
// pauses still hold it.
func (n *Dispatcher) unparkLocked() {
	parked := n.parked
	n.parked = map[*held.Entry]struct{}{}
	for e := range parked {
		if !e.Running {
			n.ReschedLocked(e)
		}
	}
}

// PauseLifted is told by n.pauses that a pause ended or the pauses were
// listed again: every parked entry checks again which pauses hold it.
func (n *Dispatcher) PauseLifted() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.unparkLocked()
}

// PauseBegan is told by n.pauses that a pause began: the runs waiting for
// a worker that it holds back are parked too.
func (n *Dispatcher) PauseBegan() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.parkPausedWaitsLocked()
}

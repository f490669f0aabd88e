package taskservice

import (
	"container/heap"
	"time"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// identState is what the node holds for one identity: its epoch (0 for the
// non-durable tasks kept per identity) and its tasks.
type identState struct {
	name    string
	epoch   int64
	durable bool
	every   bool // the EVERY_NODE tasks of the identity (not owned: run here)
	tasks   map[string]*entry
	// startQ holds due entries in dispatch order; one starter goroutine per
	// identity drains it, so one identity's runs start in order (SPEC §2.6).
	startQ   []*entry
	starting bool
	lost     bool
}

// entry is one task in the node's timer queue.
type entry struct {
	ident   *identState
	id      string
	rec     *storev1.TaskRecord
	rev     int64 // the record's mod revision; 0 for non-durable tasks
	due     time.Time
	purge   bool // due is the end of the task's retention, not a fire time
	idx     int  // index in the queue, -1 when not queued
	running bool
	gone    bool // removed while running
	counted bool // counted as pending or running in the identity's vote

	// EVERY_NODE tasks: rec merges shared and prog; rev is shared's.
	shared  *storev1.TaskRecord
	prog    *storev1.EveryNodeProgress
	progRev int64
}

// timerQueue orders entries by due time, then priority (higher first), then
// task id (creation order).
type timerQueue []*entry

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if !a.due.Equal(b.due) {
		return a.due.Before(b.due)
	}
	pa, pb := a.rec.GetSpec().GetPriority(), b.rec.GetSpec().GetPriority()
	if pa != pb {
		return pa > pb
	}
	return a.id < b.id
}
func (q timerQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx = i
	q[j].idx = j
}
func (q *timerQueue) Push(x any) {
	e := x.(*entry)
	e.idx = len(*q)
	*q = append(*q, e)
}
func (q *timerQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.idx = -1
	*q = old[:len(old)-1]
	return e
}

// set queues e at due (or moves it there).
func (q *timerQueue) set(e *entry, due time.Time) {
	e.due = due
	if e.idx >= 0 {
		heap.Fix(q, e.idx)
		return
	}
	heap.Push(q, e)
}

// remove takes e out of the queue if it is there.
func (q *timerQueue) remove(e *entry) {
	if e.idx >= 0 {
		heap.Remove(q, e.idx)
	}
}

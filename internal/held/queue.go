package held

import (
	"container/heap"
	"time"
)

// Queue orders entries by due time, then priority (higher first), then
// task id (creation order).
type Queue []*Entry

func (q Queue) Len() int { return len(q) }

func (q Queue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.Due != b.Due {
		return a.Due < b.Due
	}
	if a.Prio != b.Prio {
		return a.Prio > b.Prio
	}
	return a.ID < b.ID
}

func (q Queue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].Idx = int32(i)
	q[j].Idx = int32(j)
}

func (q *Queue) Push(x any) {
	e := x.(*Entry)
	e.Idx = int32(len(*q))
	*q = append(*q, e)
}

func (q *Queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.Idx = -1
	*q = old[:len(old)-1]
	return e
}

// Set queues e at due (or moves it there).
func (q *Queue) Set(e *Entry, due time.Time) {
	e.Due = DueOf(due)
	if e.Idx >= 0 {
		heap.Fix(q, int(e.Idx))
		return
	}
	heap.Push(q, e)
}

// Remove takes e out of the queue if it is there.
func (q *Queue) Remove(e *Entry) {
	if e.Idx >= 0 {
		heap.Remove(q, int(e.Idx))
	}
}

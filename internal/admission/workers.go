package admission

import (
	"container/heap"
	"github.com/hashicorp/go-hclog"
	"iter"
	"time"
)

// Remote is what Workers asks of the remote workers (pkg/taskservice's
// Remote satisfies it): a free slot of a worker of a kind, and the kinds
// the connected workers serve. Both take the Remote's own lock, under the
// engine lock.
type Remote[R Slot] interface {
	// Reserve takes one free slot of a connected worker of kind; false if
	// none is free.
	Reserve(kind string) (R, bool)
	// Kinds lists the kinds the connected workers serve now.
	Kinds() []string
}

// Slot is a worker's slot reserved for one run (pkg/taskservice's
// Reservation): given back with Release if the run does not use it. The
// zero R (nil) is no slot.
type Slot interface {
	comparable
	Release()
}

// Due is where a waiting entry stands in its kind's worker queue: the
// order of the node's timer queue, by when the entry fell due (At, unix
// nanoseconds), then priority (higher first), then task id (creation
// order).
type Due struct {
	At   int64
	Prio int32
	ID   string
}

// Before reports whether d comes before o.
func (d Due) Before(o Due) bool {
	if d.At != o.At {
		return d.At < o.At
	}
	if d.Prio != o.Prio {
		return d.Prio > o.Prio
	}
	return d.ID < o.ID
}

// Workers is the wait of due runs for a remote worker (Config.Remote).
//
// A due run of a kind that only remote workers serve needs a worker with a
// free slot. Its identity's starter asks for one (Admit) when it takes the
// entry off the start queue, after the kind's limit token and before the
// run slot and the start write. An entry that finds no free worker holds
// nothing: it waits in its kind's worker queue, still due, in Due order.
// When a slot frees or a worker joins, Grant hands the free slots to the
// heads of the queues in that order, across kinds. While entries of a kind
// wait, a later entry of that kind waits behind them, so the runs of one
// kind of one identity start in order; its other kinds do not wait.
//
// Workers also keeps the episodes of kinds nothing serves (unserved.go).
// Guarded by the engine lock.
type Workers[E any, R Slot] struct {
	remote   Remote[R] // nil: no remote workers
	node     string
	declared map[string]bool // read-only
	qs       map[string]*workerQueue[E, R]
	unserved map[string]*episode
}

// NewWorkers returns the worker wait of node (its name, for the waiting
// reasons) over remote (nil if it has none); declared is the set of kinds
// declared before their first worker (Config.DeclaredKinds), read-only.
func NewWorkers[E any, R Slot](remote Remote[R], node string, declared map[string]bool) *Workers[E, R] {
	return &Workers[E, R]{
		remote:   remote,
		node:     node,
		declared: declared,
		qs:       map[string]*workerQueue[E, R]{},
		unserved: map[string]*episode{},
	}
}

// WorkerHold is what an entry waiting for a worker, or holding one's slot
// before its start, carries: the caller allocates it once per entry and
// keeps it (it is reused by the entry's later waits).
type WorkerHold[E any, R Slot] struct {
	// reserved is the worker slot held from the entry's admission until its
	// start (Take).
	reserved R
	// q is the worker queue the entry waits in, nil when it does not wait;
	// idx its index there; since when it began to wait (unix nanoseconds);
	// due its place; e the entry.
	q     *workerQueue[E, R]
	idx   int
	since int64
	due   Due
	e     E
}

// Reserved reports whether h holds a worker's slot.
func (h *WorkerHold[E, R]) Reserved() bool {
	var none R
	return h != nil && h.reserved != none
}

// Take hands over the worker slot h holds (the run's start takes it); the
// zero R if none.
func (h *WorkerHold[E, R]) Take() R {
	var none R
	if h == nil {
		return none
	}
	res := h.reserved
	h.reserved = none
	return res
}

// Release gives back the worker slot h holds, if any.
func (h *WorkerHold[E, R]) Release() {
	var none R
	if res := h.Take(); res != none {
		res.Release()
	}
}

// Waiting reports whether h's entry waits in a worker queue.
func (h *WorkerHold[E, R]) Waiting() bool { return h != nil && h.q != nil }

// Kind is the kind whose worker h's entry waits for; "" if it does not.
func (h *WorkerHold[E, R]) Kind() string {
	if !h.Waiting() {
		return ""
	}
	return h.q.kind
}

// Since is when h's entry began to wait for a worker; the zero Time if it
// does not wait.
func (h *WorkerHold[E, R]) Since() time.Time {
	if !h.Waiting() || h.since == 0 {
		return time.Time{}
	}
	return time.Unix(0, h.since)
}

// Admit lets entry e, whose run needs a worker of kind, go on if h holds
// a worker's slot, reserving one if it is free and no earlier entry of
// kind waits; otherwise e joins kind's worker queue at due (its hold h)
// and false is returned, beginning kind's episode if nothing serves it
// (logged to log).
func (w *Workers[E, R]) Admit(h *WorkerHold[E, R], e E, kind string, due Due, log hclog.Logger) bool {
	if h.Reserved() {
		return true
	}
	wq := w.qs[kind]
	if wq == nil || wq.Len() == 0 {
		if res, ok := w.remote.Reserve(kind); ok {
			h.reserved = res
			return true
		}
	}
	if wq == nil {
		wq = &workerQueue[E, R]{kind: kind}
		w.qs[kind] = wq
	}
	h.q, h.since, h.due, h.e = wq, time.Now().UnixNano(), due, e
	heap.Push(wq, h)
	if wq.Len() == 1 {
		w.noteWait(kind, log)
	}
	return false
}

// Grant hands the free worker slots to the waiting entries: the earliest
// head of the kinds' queues first, a kind left out once its Reserve fails.
// give is called with each entry given one, out of its queue already and
// holding the slot. Episodes that a joining worker ends are ended.
func (w *Workers[E, R]) Grant(log hclog.Logger, give func(e E)) {
	var full map[string]bool
	for {
		var best *workerQueue[E, R]
		for kind, wq := range w.qs {
			if wq.Len() == 0 {
				delete(w.qs, kind)
				continue
			}
			if full[kind] {
				continue
			}
			if best == nil || wq.h[0].due.Before(best.h[0].due) {
				best = wq
			}
		}
		if best == nil {
			w.endServed(nil, log) // a worker that joined ends its kind's episode
			return
		}
		res, ok := w.remote.Reserve(best.kind)
		if !ok {
			if full == nil {
				full = map[string]bool{}
			}
			full[best.kind] = true
			continue
		}
		h := heap.Pop(best).(*WorkerHold[E, R])
		h.q, h.since, h.reserved = nil, 0, res
		give(h.e)
	}
}

// Drop takes h's entry out of its worker queue, if it waits in one, and
// reports whether it did; the kind's episode ends if no run of it waits
// any more.
func (w *Workers[E, R]) Drop(h *WorkerHold[E, R], log hclog.Logger) bool {
	if !h.Waiting() {
		return false
	}
	kind := h.q.kind
	heap.Remove(h.q, h.idx)
	h.q, h.since = nil, 0
	w.endIfIdle(kind, log)
	return true
}

// Any reports whether some kind has (or had, until the next Grant) a
// worker queue.
func (w *Workers[E, R]) Any() bool { return len(w.qs) > 0 }

// All yields the entries waiting for a worker, kind after kind. The
// queues are not to be changed while it runs.
func (w *Workers[E, R]) All() iter.Seq[E] {
	return func(yield func(E) bool) {
		for _, wq := range w.qs {
			for _, h := range wq.h {
				if !yield(h.e) {
					return
				}
			}
		}
	}
}

// Waiting counts the entries waiting for a worker, by kind: the kinds with
// waiting entries and those the connected workers serve that have no
// local handler (hasHandler), with 0 if none waits; nil without a Remote.
func (w *Workers[E, R]) Waiting(hasHandler func(kind string) bool) map[string]int {
	if w.remote == nil {
		return nil
	}
	out := map[string]int{}
	for _, kind := range w.remote.Kinds() {
		if !hasHandler(kind) {
			out[kind] = 0
		}
	}
	for kind, wq := range w.qs {
		if wq.Len() > 0 {
			out[kind] = wq.Len()
		}
	}
	return out
}

// queued counts the entries waiting for a worker of kind.
func (w *Workers[E, R]) queued(kind string) int {
	if wq := w.qs[kind]; wq != nil {
		return wq.Len()
	}
	return 0
}

// workerQueue is the entries of one kind waiting for a worker, a heap in
// Due order (heap.Interface).
type workerQueue[E any, R Slot] struct {
	kind string
	h    []*WorkerHold[E, R]
}

func (q *workerQueue[E, R]) Len() int           { return len(q.h) }
func (q *workerQueue[E, R]) Less(i, j int) bool { return q.h[i].due.Before(q.h[j].due) }
func (q *workerQueue[E, R]) Swap(i, j int) {
	q.h[i], q.h[j] = q.h[j], q.h[i]
	q.h[i].idx, q.h[j].idx = i, j
}
func (q *workerQueue[E, R]) Push(x any) {
	h := x.(*WorkerHold[E, R])
	h.idx = len(q.h)
	q.h = append(q.h, h)
}
func (q *workerQueue[E, R]) Pop() any {
	h := q.h[len(q.h)-1]
	q.h[len(q.h)-1] = nil
	q.h = q.h[:len(q.h)-1]
	return h
}

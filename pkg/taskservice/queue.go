package taskservice

import (
	"container/heap"
	"math"
	"time"

	"google.golang.org/protobuf/proto"

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
	// identity drains it, so one identity's runs start in order (contract §2.6).
	startQ []*entry
	// grantQ holds entries given a token of their kind's limit, started
	// before startQ (limits.go).
	grantQ []*entry
	// armQ holds entries due within the look-ahead, to be armed; fireQ
	// the armed runs whose fire time has come, launched first (arming.go).
	armQ     []*entry
	fireQ    []*armedRun
	starting bool
	// held counts the run slots the identity's runs hold (at most
	// identityShare); shareWait, when set, is closed when one is given
	// back.
	held      int
	shareWait chan struct{}
	lost      bool
}

// instant is a wall-clock time in Unix nanoseconds, 0 for none: the times
// a waiting entry carries besides its due time take 8 bytes each this way,
// where a time.Time takes 24 (a node holds an entry per pending task).
type instant int64

func instantOf(t time.Time) instant {
	if t.IsZero() {
		return 0
	}
	return instant(t.UnixNano())
}

// dueOf is t as an entry's due instant: as instantOf, with times past what
// Unix nanoseconds hold (the year 2262) kept last instead of wrapping.
func dueOf(t time.Time) instant {
	if t.After(maxInstant.time()) {
		return maxInstant
	}
	return instantOf(t)
}

// maxInstant is the latest instant.
const maxInstant = instant(math.MaxInt64)

// time returns the instant as a time.Time; the zero Time for none.
func (i instant) time() time.Time {
	if i == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(i))
}

// entry is one task in the node's timer queue. A durable task waiting in
// the queue keeps its record encoded (raw), decoded only when it runs: a
// node holds every pending task of its identities, and the encoded form is
// a fraction of the decoded one's size.
type entry struct {
	ident   *identState
	id      string
	rec     *storev1.TaskRecord // nil while frozen in raw
	raw     []byte
	prio    int32
	rev     int64   // the record's mod revision; 0 for non-durable tasks
	due     instant // when it is due (dueOf; the queue's order)
	purge   bool    // due is the end of the task's retention, not a fire time
	idx     int     // index in the queue, -1 when not queued
	running bool
	gone    bool // removed while running
	counted bool // counted as pending or running in the identity's vote
	thawing bool // cold, its record being read again (thaw.go)
	// awaitSince is when the entry began waiting for the result of a run
	// that another live node still has in flight (a planned move);
	// recheckAt is when its marker is looked at again.
	awaitSince instant
	recheckAt  instant
	// readyAt is when the entry was first popped due for its next run
	// (the queue wait is measured from it); token is the token of its
	// kind's limit it holds until its start (limits.go). Both under n.mu.
	readyAt instant
	token   *kindLimit

	// allow_overlap (overlap.go): a shadow entry stands for the next fire
	// time of overlapOf's task while its run is in flight (it is in the
	// queue only, never in ident.tasks); shadow is the task's own.
	overlapOf *entry
	shadow    *entry

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
	if a.due != b.due {
		return a.due < b.due
	}
	if a.prio != b.prio {
		return a.prio > b.prio
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
	e.due = dueOf(due)
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

// record returns the entry's task record, decoding it if it is frozen.
// Caller holds n.mu.
func (e *entry) record() *storev1.TaskRecord {
	if e.rec != nil {
		return e.rec
	}
	if e.raw == nil {
		return nil
	}
	rec := &storev1.TaskRecord{}
	if err := proto.Unmarshal(e.raw, rec); err != nil {
		return nil // cannot happen: raw is our own encoding
	}
	return rec
}

// cold reports a durable task waiting far from its due time whose record
// the node does not hold: it is read again before it is due (thaw.go).
func (e *entry) cold() bool { return e.rec == nil && e.raw == nil && e.rev > 0 }

// freeze keeps only the encoded record of a durable task that waits in
// the queue, and not even that (cold) for one due more than coldAfter from
// now. Caller holds n.mu.
func (e *entry) freeze(now time.Time, coldAfter time.Duration) {
	if e.rec == nil || !e.ident.durable || e.running {
		return
	}
	if e.coldable(now, coldAfter) {
		e.rec = nil
		return
	}
	b, err := proto.Marshal(e.rec)
	if err != nil {
		return
	}
	e.raw, e.rec = b, nil
}

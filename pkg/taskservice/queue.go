package taskservice

import (
	"container/heap"
	"math"
	"time"
	"unsafe"

	"google.golang.org/protobuf/proto"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// identState is what the node holds for one identity: its epoch (0 for the
// non-durable tasks kept per identity) and its tasks.
type identState struct {
	name  string
	epoch int64
	// scope is how the identity's tasks are kept, started and committed
	// (scope.go): owned here (IDENTITY), EVERY_NODE (not owned: run
	// here), or non-durable.
	scope scopeKind
	lost  bool
	// leaving marks an identity chosen to move away (internal/ownership's rebalance.go, ownerside.go):
	// none of its runs starts until its move is made or given up.
	leaving bool
	tasks   taskSet
	// run holds the identity's start queues and run slots while it has
	// due work or runs (r); nil otherwise, which is most of the time for
	// most identities: a node holds an identState per identity it owns.
	run *identRun
}

// identRun is what an identity with due work or runs in flight holds
// besides its tasks. It is allocated on first use (r) and dropped when the
// identity is idle again (idleLocked); while its starter runs it stays, so
// the starter may keep pointers into it across unlocks.
type identRun struct {
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
}

// r returns st's identRun, allocating it if st has none. n.mu held.
func (st *identState) r() *identRun {
	if st.run == nil {
		st.run = &identRun{}
	}
	return st.run
}

// idleLocked drops st's identRun once nothing is queued, no run holds a
// slot, and no starter runs. n.mu held.
func (st *identState) idleLocked() {
	r := st.run
	if r != nil && !r.starting && r.held == 0 && r.shareWait == nil &&
		len(r.startQ)+len(r.grantQ)+len(r.armQ)+len(r.fireQ) == 0 {
		st.run = nil
	}
}

// task returns the entry of task id; nil if there is none or st is nil.
func (st *identState) task(id string) *entry {
	if st == nil {
		return nil
	}
	return st.tasks.get(id)
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
	ident *identState
	id    string
	rec   *storev1.TaskRecord // nil while frozen in raw, or cold
	raw   string              // the encoded record while frozen (freeze)
	rev   int64               // the record's mod revision; 0 for non-durable tasks
	due   instant             // when it is due (dueOf; the queue's order)
	// readyAt is when the entry was first popped due for its next run (the
	// queue wait is measured from it). Under n.mu.
	readyAt instant
	x       *entryExtra // what few entries need; nil for most (extra)
	idx     int32       // index in the queue, -1 when not queued
	prio    int32
	purge   bool // due is the end of the task's retention, not a fire time
	running bool
	gone    bool // removed while running
	counted bool // counted as pending or running in the identity's vote
	thawing bool // cold, its record being read again (thaw.go)
}

// entryExtra holds the fields only some entries use, out of line: a node
// holds an entry per pending task, and every field kept in entry itself is
// paid for by all of them (docs/performance.md, "Heap per pending task").
// Once allocated it stays with its entry.
type entryExtra struct {
	// awaitSince is when the entry began waiting for the result of a run
	// that another live node still has in flight (a planned move);
	// recheckAt is when its marker is looked at again.
	awaitSince instant
	recheckAt  instant
	// takenAt is when this node took the task with a fire time already
	// past (takeover.go): fire times before it are caught up.
	takenAt instant
	// token is the token of its kind's limit the entry holds until its
	// start (limits.go).
	token *kindLimit
	// ww is the entry's wait for a remote worker, or the worker slot it
	// holds until its start (workerwait.go).
	ww *workerHold

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

// extra returns e's out-of-line fields for writing, allocating them the
// first time.
func (e *entry) extra() *entryExtra {
	if e.x == nil {
		e.x = &entryExtra{}
	}
	return e.x
}

// clearAwait ends e's wait for a run in flight elsewhere (markers.go).
func (e *entry) clearAwait() {
	if e.x != nil {
		e.x.awaitSince, e.x.recheckAt = 0, 0
	}
}

// noExtra is what ex returns for an entry without entryExtra: all zero.
// Never written: writers go through extra.
var noExtra entryExtra

// ex returns e's out-of-line fields for reading: the zero ones if e has
// none.
func (e *entry) ex() *entryExtra {
	if e.x == nil {
		return &noExtra
	}
	return e.x
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
	q[i].idx = int32(i)
	q[j].idx = int32(j)
}
func (q *timerQueue) Push(x any) {
	e := x.(*entry)
	e.idx = int32(len(*q))
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
		heap.Fix(q, int(e.idx))
		return
	}
	heap.Push(q, e)
}

// remove takes e out of the queue if it is there.
func (q *timerQueue) remove(e *entry) {
	if e.idx >= 0 {
		heap.Remove(q, int(e.idx))
	}
}

// record returns the entry's task record, decoding it if it is frozen.
// Caller holds n.mu.
func (e *entry) record() *storev1.TaskRecord {
	if e.rec != nil {
		return e.rec
	}
	if e.raw == "" {
		return nil
	}
	rec := &storev1.TaskRecord{}
	if err := proto.Unmarshal(unsafe.Slice(unsafe.StringData(e.raw), len(e.raw)), rec); err != nil {
		return nil // cannot happen: raw is our own encoding
	}
	return rec
}

// cold reports a durable task waiting far from its due time whose record
// the node does not hold: it is read again before it is due (thaw.go).
func (e *entry) cold() bool { return e.rec == nil && e.raw == "" && e.rev > 0 }

// freeze keeps only the encoded record of a durable task that waits in
// the queue, and not even that (cold) for one due more than coldAfter from
// now. Caller holds n.mu.
func (e *entry) freeze(now time.Time, coldAfter time.Duration) {
	if e.rec == nil || !e.ident.scope.owned() || e.running {
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
	e.raw, e.rec = frozen(b), nil
}

// frozen returns b as a string without copying it: an entry's raw record
// costs 16 bytes of header instead of a slice's 24. b must never be written
// again, which holds for what proto.Marshal returns and for a value the
// etcd client decoded for this node alone; record reads it back without
// writing to it (proto.Unmarshal copies what it keeps).
func frozen(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

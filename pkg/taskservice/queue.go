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
	Name  string
	Epoch int64
	// Scope is how the identity's tasks are kept, started and committed
	// (Scope.go): owned here (IDENTITY), EVERY_NODE (not owned: run
	// here), or non-durable.
	Scope scopeKind
	Lost  bool
	// Leaving marks an identity chosen to move away (internal/ownership's rebalance.go, ownerside.go):
	// none of its runs starts until its move is made or given up.
	Leaving bool
	Tasks   taskSet
	// Active holds the identity's start queues and Active slots while it has
	// due work or runs (r); nil otherwise, which is most of the time for
	// most identities: a node holds an identState per identity it owns.
	Active *identRun
}

// identRun is what an identity with due work or runs in flight holds
// besides its tasks. It is allocated on first use (r) and dropped when the
// identity is idle again (idleLocked); while its starter runs it stays, so
// the starter may keep pointers into it across unlocks.
type identRun struct {
	// StartQ holds due entries in dispatch order; one starter goroutine per
	// identity drains it, so one identity's runs start in order (contract §2.6).
	StartQ []*entry
	// GrantQ holds entries given a token of their kind's limit, started
	// before startQ (limits.go).
	GrantQ []*entry
	// ArmQ holds entries due within the look-ahead, to be armed; fireQ
	// the armed runs whose fire time has come, launched first (arming.go).
	ArmQ     []*entry
	FireQ    []*armedRun
	Starting bool
	// Held counts the run slots the identity's runs hold (at most
	// identityShare); shareWait, when set, is closed when one is given
	// back.
	Held      int
	ShareWait chan struct{}
}

// Activate returns st's identRun, allocating it if st has none. n.mu held.
func (st *identState) Activate() *identRun {
	if st.Active == nil {
		st.Active = &identRun{}
	}
	return st.Active
}

// DropIfIdle drops st's identRun once nothing is queued, no run holds a
// slot, and no starter runs. n.mu held.
func (st *identState) DropIfIdle() {
	r := st.Active
	if r != nil && !r.Starting && r.Held == 0 && r.ShareWait == nil &&
		len(r.StartQ)+len(r.GrantQ)+len(r.ArmQ)+len(r.FireQ) == 0 {
		st.Active = nil
	}
}

// Task returns the entry of Task id; nil if there is none or st is nil.
func (st *identState) Task(id string) *entry {
	if st == nil {
		return nil
	}
	return st.Tasks.Get(id)
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
	if t.After(maxInstant.Time()) {
		return maxInstant
	}
	return instantOf(t)
}

// maxInstant is the latest instant.
const maxInstant = instant(math.MaxInt64)

// Time returns the instant as a Time.Time; the zero Time for none.
func (i instant) Time() time.Time {
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
	Ident *identState
	ID    string
	Rec   *storev1.TaskRecord // nil while frozen in raw, or cold
	Raw   string              // the encoded record while frozen (freeze)
	Rev   int64               // the record's mod revision; 0 for non-durable tasks
	Due   instant             // when it is due (dueOf; the queue's order)
	// ReadyAt is when the entry was first popped due for its next run (the
	// queue wait is measured from it). Under n.mu.
	ReadyAt instant
	X       *entryExtra // what few entries need; nil for most (extra)
	Idx     int32       // index in the queue, -1 when not queued
	Prio    int32
	Purge   bool // due is the end of the task's retention, not a fire time
	Running bool
	Gone    bool // removed while running
	Counted bool // counted as pending or running in the identity's vote
	Thawing bool // cold, its record being read again (thaw.go)
}

// entryExtra holds the fields only some entries use, out of line: a node
// holds an entry per pending task, and every field kept in entry itself is
// paid for by all of them (docs/performance.md, "Heap per pending task").
// Once allocated it stays with its entry.
type entryExtra struct {
	// AwaitSince is when the entry began waiting for the result of a run
	// that another live node still has in flight (a planned move);
	// recheckAt is when its marker is looked at again.
	AwaitSince instant
	RecheckAt  instant
	// TakenAt is when this node took the task with a fire time already
	// past (takeover.go): fire times before it are caught up.
	TakenAt instant
	// Token is the Token of its kind's limit the entry holds until its
	// start (limits.go).
	Token *kindLimit
	// WW is the entry's wait for a remote worker, or the worker slot it
	// holds until its start (workerwait.go).
	WW *workerHold

	// allow_overlap (overlap.go): a shadow entry stands for the next fire
	// time of OverlapOf's task while its run is in flight (it is in the
	// queue only, never in ident.tasks); shadow is the task's own.
	OverlapOf *entry
	Shadow    *entry

	// EVERY_NODE tasks: rec merges Shared and prog; rev is Shared's.
	Shared  *storev1.TaskRecord
	Prog    *storev1.EveryNodeProgress
	ProgRev int64
}

// Extra returns e's out-of-line fields for writing, allocating them the
// first time.
func (e *entry) Extra() *entryExtra {
	if e.X == nil {
		e.X = &entryExtra{}
	}
	return e.X
}

// ClearAwait ends e's wait for a run in flight elsewhere (markers.go).
func (e *entry) ClearAwait() {
	if e.X != nil {
		e.X.AwaitSince, e.X.RecheckAt = 0, 0
	}
}

// noExtra is what ex returns for an entry without entryExtra: all zero.
// Never written: writers go through extra.
var noExtra entryExtra

// Ex returns e's out-of-line fields for reading: the zero ones if e has
// none.
func (e *entry) Ex() *entryExtra {
	if e.X == nil {
		return &noExtra
	}
	return e.X
}

// timerQueue orders entries by due time, then priority (higher first), then
// task id (creation order).
type timerQueue []*entry

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.Due != b.Due {
		return a.Due < b.Due
	}
	if a.Prio != b.Prio {
		return a.Prio > b.Prio
	}
	return a.ID < b.ID
}
func (q timerQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].Idx = int32(i)
	q[j].Idx = int32(j)
}
func (q *timerQueue) Push(x any) {
	e := x.(*entry)
	e.Idx = int32(len(*q))
	*q = append(*q, e)
}
func (q *timerQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.Idx = -1
	*q = old[:len(old)-1]
	return e
}

// Set queues e at due (or moves it there).
func (q *timerQueue) Set(e *entry, due time.Time) {
	e.Due = dueOf(due)
	if e.Idx >= 0 {
		heap.Fix(q, int(e.Idx))
		return
	}
	heap.Push(q, e)
}

// Remove takes e out of the queue if it is there.
func (q *timerQueue) Remove(e *entry) {
	if e.Idx >= 0 {
		heap.Remove(q, int(e.Idx))
	}
}

// Record returns the entry's task Record, decoding it if it is frozen.
// Caller holds n.mu.
func (e *entry) Record() *storev1.TaskRecord {
	if e.Rec != nil {
		return e.Rec
	}
	if e.Raw == "" {
		return nil
	}
	rec := &storev1.TaskRecord{}
	if err := proto.Unmarshal(unsafe.Slice(unsafe.StringData(e.Raw), len(e.Raw)), rec); err != nil {
		return nil // cannot happen: raw is our own encoding
	}
	return rec
}

// Cold reports a durable task waiting far from its due time whose record
// the node does not hold: it is read again before it is due (thaw.go).
func (e *entry) Cold() bool { return e.Rec == nil && e.Raw == "" && e.Rev > 0 }

// Freeze keeps only the encoded record of a durable task that waits in
// the queue, and not even that (cold) for one due more than coldAfter from
// now. Caller holds n.mu.
func (e *entry) Freeze(now time.Time, coldAfter time.Duration) {
	if e.Rec == nil || !e.Ident.Scope.Owned() || e.Running {
		return
	}
	if e.Coldable(now, coldAfter) {
		e.Rec = nil
		return
	}
	b, err := proto.Marshal(e.Rec)
	if err != nil {
		return
	}
	e.Raw, e.Rec = frozen(b), nil
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

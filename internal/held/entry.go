package held

import (
	"time"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/admission"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// Entry is one task in the node's timer queue. A durable task waiting in
// the queue keeps its record encoded (raw), decoded only when it runs: a
// node holds every pending task of its identities, and the encoded form is
// a fraction of the decoded one's size.
type Entry struct {
	Ident *Ident
	ID    string
	Rec   *storev1.TaskRecord // nil while frozen in raw, or cold
	Raw   string              // the encoded record while frozen (Freeze)
	Rev   int64               // the record's mod revision; 0 for non-durable tasks
	Due   Instant             // when it is due (DueOf; the queue's order)
	// ReadyAt is when the entry was first popped due for its next run (the
	// queue wait is measured from it). Under the engine lock.
	ReadyAt Instant
	X       *Extra // what few entries need; nil for most (Extra)
	Idx     int32  // index in the queue, -1 when not queued
	Prio    int32
	Purge   bool // due is the end of the task's retention, not a fire time
	Running bool
	Gone    bool // removed while running
	Counted bool // counted as pending or running in the identity's vote
	Thawing bool // cold, its record being read again (pkg/taskservice's thaw.go)
}

// Extra holds the fields only some entries use, out of line: a node
// holds an entry per pending task, and every field kept in entry itself is
// paid for by all of them (docs/performance.md, "Heap per pending task").
// Once allocated it stays with its entry.
type Extra struct {
	// AwaitSince is when the entry began waiting for the result of a run
	// that another live node still has in flight (a planned move);
	// recheckAt is when its marker is looked at again.
	AwaitSince Instant
	RecheckAt  Instant
	// TakenAt is when this node took the task with a fire time already
	// past (pkg/taskservice's takeover.go): fire times before it are caught up.
	TakenAt Instant
	// Token is the token of its kind's limit the entry holds until its
	// start (pkg/taskservice's limits.go).
	Token *KindLimit
	// WW is the entry's wait for a remote worker, or the worker slot it
	// holds until its start (pkg/taskservice's workerwait.go).
	WW *WorkerHold

	// allow_overlap (internal/runs/overlap.go): a shadow entry stands for the next fire
	// time of OverlapOf's task while its run is in flight (it is in the
	// queue only, never in ident.tasks); shadow is the task's own.
	OverlapOf *Entry
	Shadow    *Entry

	// EVERY_NODE tasks: Rec merges Shared and Prog; Rev is Shared's.
	Shared  *storev1.TaskRecord
	Prog    *storev1.EveryNodeProgress
	ProgRev int64
}

// Extra returns e's out-of-line fields for writing, allocating them the
// first time.
func (e *Entry) Extra() *Extra {
	if e.X == nil {
		e.X = &Extra{}
	}
	return e.X
}

// ClearAwait ends e's wait for a run in flight elsewhere (internal/runs/markers.go).
func (e *Entry) ClearAwait() {
	if e.X != nil {
		e.X.AwaitSince, e.X.RecheckAt = 0, 0
	}
}

// NoExtra is what Ex returns for an entry without Extra: all zero. Never
// written: writers go through Extra (the node's footprint test checks that
// it is still zero after runs).
var NoExtra Extra

// Ex returns e's out-of-line fields for reading: the zero ones if e has
// none.
func (e *Entry) Ex() *Extra {
	if e.X == nil {
		return &NoExtra
	}
	return e.X
}

// Record returns the entry's task record, decoding it if it is frozen.
// The engine lock held.
func (e *Entry) Record() *storev1.TaskRecord {
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
// the node does not hold: it is read again before it is due (pkg/taskservice's thaw.go).
func (e *Entry) Cold() bool { return e.Rec == nil && e.Raw == "" && e.Rev > 0 }

// Freeze keeps only the encoded record of a durable task that waits in
// the queue, and not even that (cold) for one due more than coldAfter from
// now. The engine lock held.
func (e *Entry) Freeze(now time.Time, coldAfter time.Duration) {
	if e.Rec == nil || !e.Ident.Scope.GoesCold() || e.Running {
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
	e.Raw, e.Rec = Frozen(b), nil
}

// Frozen returns b as a string without copying it: an entry's raw record
// costs 16 bytes of header instead of a slice's 24. b must never be written
// again, which holds for what proto.Marshal returns and for a value the
// etcd client decoded for this node alone; record reads it back without
// writing to it (proto.Unmarshal copies what it keeps).
func Frozen(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Hold returns e's worker hold for writing, allocating it.
func (e *Entry) Hold() *WorkerHold {
	x := e.Extra()
	if x.WW == nil {
		x.WW = &WorkerHold{}
	}
	return x.WW
}

// dueKey is e's place in its kind's worker queue: the timer queue's order,
// by when e fell due (readyAt), then priority, then task id.
func DueKey(e *Entry) admission.Due {
	at := e.ReadyAt
	if at == 0 {
		at = e.Due
	}
	return admission.Due{At: int64(at), Prio: e.Prio, ID: e.ID}
}

// Coldable reports whether e, about to wait in the queue until e.Due, may
// drop its record (coldAfter 0: none may). The engine lock held.
func (e *Entry) Coldable(now time.Time, coldAfter time.Duration) bool {
	st, rec := e.Ident, e.Rec
	if coldAfter <= 0 || !st.Scope.GoesCold() || e.Purge || e.Ex().OverlapOf != nil || e.Ex().Shadow != nil || e.Rev <= 0 ||
		e.Ex().AwaitSince != 0 || e.Due.Time().Sub(now) <= coldAfter {
		return false
	}
	return rec.Running == nil && !rec.ManualRequested && !rec.GetSpec().GetAllowOverlap()
}

// KindLimit is one kind's limit (internal/admission); an entry's or a
// run's *KindLimit is the token it holds.
type KindLimit = admission.Limit[*Entry, *Ident]

// WorkerHold is an entry's wait for a remote worker, or the worker's slot
// it holds until its start.
type WorkerHold = admission.WorkerHold[*Entry, Slot]

// Slot is a remote worker's slot reserved for one run (pkg/taskservice's
// Reservation is one): Live reports whether its worker is still
// connected, Release gives it back unused.
type Slot interface {
	Live() bool
	Release()
}

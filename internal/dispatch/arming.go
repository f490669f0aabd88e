package dispatch

import (
	"container/heap"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/writepath"
)

// This file is the node's look-ahead: runs armed ahead of their fire time.
//
// A run's start write (its marker: RUNNING, the run number, the fence) is
// applied before its handler is called. Written at the fire time, the start
// writes of runs due at one instant by the thousand make the last of them
// late by all their round trips. So a run due within Config.LookAhead is
// armed: its start is written (planned as of its fire time) while it is not
// yet due, and its handler is called at the fire time, through its
// identity's starter, holding a run slot like any other run.
//
// Guarantees:
//   - An armed run's handler is never called before its fire time, nor once
//     the node cannot prove its lease live (callHandler checks, as for every
//     run), nor once its flight was cancelled.
//   - At its fire time an armed run passes the same fences its start write
//     would have passed then: the compares of one item of the node's
//     batched Txns, sent after the fire time, for the runs of an identity
//     firing together (confirmArmed), hold only if this node's registration
//     is under the lease the start was planned with, the identity under the
//     epoch of the start, each task as the start wrote it, and neither the
//     identity nor the kind paused (if the item fails, a linearizable read,
//     itself after the fire time, tells which runs still pass). A run that
//     fails any of them, or whose node learnt as much sooner, is not
//     called.
//   - An armed run not called leaves no trace: its own node takes back what
//     the start changed in the task (record.UndoStart; a change made meanwhile,
//     such as a cancel, stays), with no run number used, no history and no
//     event, and the task is due again at once. Only when its identity has
//     moved away (the node can no longer write the task) is the run settled
//     by the new owner as any run whose handler was not called: its fire
//     time runs again with the same run number, as a recovery.
//   - Only runs whose outcome a crash cannot lose are armed: durable
//     IDENTITY tasks with requests_recovery, without allow_overlap, of a
//     kind without a limit. A node that dies with runs armed leaves their
//     markers, which the task's next owner resolves as for any interrupted
//     run: their fire times run again.
//   - At most maxArmed runs are armed at once; beyond that runs start at
//     their fire time, as without look-ahead.
//   - Every armed run is launched exactly once: at its fire time, at once
//     when it is disarmed, or when the node stops (not called).

// armState is the look-ahead's state (n.mu): armed runs by fire time
// (heap), every armed run not launched yet (runs), how many are armed or
// being armed (n), and the arming order (seq).
type armState struct {
	heap armedHeap
	runs map[*held.Armed]struct{}
	n    int
	seq  uint64
}

// maxArmed bounds the runs armed at once (each holds its planned record
// until it fires).
const maxArmed = 1 << 14

// ErrDisarmed is the cause of an armed run's context when it is not to be
// called: what the node learnt before its fire time.
var ErrDisarmed = errors.New("handler not called")

func disarmed(why string) error { return fmt.Errorf("%w: %s before its fire time", ErrDisarmed, why) }

// confirmFor is how long a confirmation stands while the run waits for a
// run slot: past it, the run is confirmed again before it is called.
const confirmFor = 50 * time.Millisecond

// armedHeap orders armed runs as the timer queue orders entries: by fire
// time, then priority (higher first), then task id.
type armedHeap []*held.Armed

func (h armedHeap) Len() int { return len(h) }
func (h armedHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if !a.At.Equal(b.At) {
		return a.At.Before(b.At)
	}
	if a.E.Prio != b.E.Prio {
		return a.E.Prio > b.E.Prio
	}
	if a.E.ID != b.E.ID {
		return a.E.ID < b.E.ID
	}
	return a.Seq < b.Seq
}
func (h armedHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].Idx = i
	h[j].Idx = j
}
func (h *armedHeap) Push(x any) {
	a := x.(*held.Armed)
	a.Idx = len(*h)
	*h = append(*h, a)
}
func (h *armedHeap) Pop() any {
	old := *h
	a := old[len(old)-1]
	old[len(old)-1] = nil
	a.Idx = -1
	*h = old[:len(old)-1]
	return a
}

// armableLocked reports whether due entry e may be armed ahead of its due
// time (see the guarantees above). It keeps e's record decoded: e is about
// to start either way. n.mu held.
func (n *Dispatcher) armableLocked(e *held.Entry) bool {
	st := e.Ident
	if !st.Scope.ArmsAhead() || st.Lost || e.Purge || e.Ex().OverlapOf != nil || e.Gone {
		return false
	}
	rec := e.Record()
	if rec == nil || rec.Running != nil || rec.ManualRequested {
		return false
	}
	e.Rec, e.Raw = rec, ""
	spec := rec.GetSpec()
	if spec.GetAllowOverlap() || (spec.RequestsRecovery != nil && !spec.GetRequestsRecovery()) {
		return false
	}
	// A run that waits for its kind's limit or for a remote worker is
	// started when it gets one, not ahead.
	return n.limitOfLocked(e) == nil && n.workerKindLocked(e) == ""
}

// popArmableLocked takes the queue's head entries due by now+LookAhead
// that may be armed into their identities' arm queues, and returns how
// long the dispatcher may sleep before the head is due or armable. n.mu
// held.
func (n *Dispatcher) popArmableLocked(now time.Time) time.Duration {
	ahead := n.cfg.LookAhead
	for len(n.Queue) > 0 {
		e := n.Queue[0]
		if !e.Due.Time().After(now) {
			return 0 // due: the caller starts it
		}
		if ahead <= 0 || n.arming.n >= maxArmed || !n.armableLocked(e) {
			return e.Due.Time().Sub(now)
		}
		if e.Due.Time().After(now.Add(ahead)) {
			return e.Due.Time().Sub(now) - ahead
		}
		heap.Pop(&n.Queue)
		e.Running = true
		if e.ReadyAt == 0 {
			e.ReadyAt = e.Due
		}
		n.TouchLocked(e)
		n.arming.n++
		st := e.Ident
		r := st.Activate()
		r.ArmQ = append(r.ArmQ, e)
		n.ensureStarterLocked(st)
	}
	return time.Hour
}

// RegisterArmedLocked records a run whose start was just written ahead of
// its fire time. n.mu held.
func (n *Dispatcher) RegisterArmedLocked(a *held.Armed) {
	n.arming.seq++
	a.Seq = n.arming.seq
	a.Flight.Armed = a
	n.arming.runs[a] = struct{}{}
	heap.Push(&n.arming.heap, a)
}

// fireDueLocked moves the armed runs whose fire time has come to their
// identities' fire queues, and returns how long until the next one. n.mu
// held.
func (n *Dispatcher) fireDueLocked(now time.Time) time.Duration {
	for len(n.arming.heap) > 0 {
		a := n.arming.heap[0]
		if a.At.After(now) {
			return a.At.Sub(now)
		}
		heap.Pop(&n.arming.heap)
		n.fireLocked(a)
	}
	return time.Hour
}

// fireLocked hands armed run a to its identity's starter. n.mu held.
func (n *Dispatcher) fireLocked(a *held.Armed) {
	if a.Idx >= 0 {
		heap.Remove(&n.arming.heap, a.Idx)
	}
	if a.Flight.Armed != a {
		return // fired already
	}
	a.Flight.Armed = nil
	n.arming.n--
	st := a.E.Ident
	r := st.Activate()
	r.FireQ = append(r.FireQ, a)
	n.ensureStarterLocked(st)
}

// disarmLocked cancels armed run a for the reason why and fires it at once,
// so that it settles (not called) without waiting for its fire time. n.mu
// held.
func (n *Dispatcher) disarmLocked(a *held.Armed, why string) {
	a.Flight.Cancel(disarmed(why))
	n.fireLocked(a)
}

// TaskChangedLocked tells an armed run of e, if there is one, that e's
// task changed: it is disarmed. n.mu held.
func (n *Dispatcher) TaskChangedLocked(e *held.Entry) {
	if f := n.Flights.Of(e.Ref()); f != nil && f.Armed != nil {
		f.Armed.Stale = true
		n.disarmLocked(f.Armed, "the task changed")
	}
}

// checkFiringLocked disarms armed run a if what this node knows now forbids
// its call (see the guarantees above); its lease is checked at the call.
// n.mu held.
func (n *Dispatcher) checkFiringLocked(a *held.Armed) {
	st := a.E.Ident
	lease, registered := n.Member.Registration()
	var why string
	switch {
	case a.Flight.Ctx.Err() != nil:
		return
	case st.Lost || a.E.Gone || a.Flight.LeftDone || n.Idents[st.Name] != st:
		why = "its identity left this node"
	case st.Epoch != a.Epoch:
		why = "its identity was mapped again"
	case a.Lease != lease || a.Epoch < registered:
		why = "this node registered again"
	case a.Stale:
		why = "the task changed"
	case n.PausedByLocked(a.Rec, st.Name) != nil:
		why = "it was paused"
	default:
		return
	}
	a.Flight.Cancel(disarmed(why))
}

// confirmArmed makes, for the runs of batch (of one identity, their fire
// time come), the checks their start write would have made now, as one
// item of compares only in the node's batched checks (batch.go), sent
// after their fire time: that this node's registration holds the lease
// each start was planned under, that the identity holds each start's
// epoch, that each task is as its start wrote it, and that neither the
// identity nor a run's kind is paused. If the item fails, one linearizable
// read (itself after the fire time) tells which runs still pass; the
// others, or all if etcd does not answer, are disarmed. Bounded by the
// lease margin, as a start is.
func (n *Dispatcher) confirmArmed(st *held.Ident, batch []*held.Armed) {
	checks := make([]writepath.ArmedCheck, len(batch))
	for i, a := range batch {
		checks[i] = writepath.ArmedCheck{Lease: writepath.Lease(a.Lease), Epoch: a.Epoch, Kind: a.Rec.GetSpec().GetKind(), Task: a.E.ID, TaskRev: a.Rev}
	}
	ctx, cancel := n.Runs.StartCtx()
	out := n.Writes.Checks.Do(ctx, n.Writes.Shapes.Confirm(st.Name, checks))
	cancel()
	var failed map[*held.Armed]string
	switch {
	case out.Err != nil:
		n.Log.Warn("armed runs not confirmed at their fire time; not called", "identity", st.Name,
			"runs", len(batch), "error", out.Err)
		failed = map[*held.Armed]string{}
		for _, a := range batch {
			failed[a] = "its start could not be confirmed (" + out.Err.Error() + ")"
		}
	case !out.OK:
		failed = n.whichArmedFail(st, batch)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	// As a start's write, the check holds at a point before its reply; the
	// wait for a slot is counted from the reply.
	answered := time.Now()
	for _, a := range batch {
		a.Confirmed = answered
		if why, ok := failed[a]; ok {
			a.Flight.Cancel(disarmed(why))
		}
	}
}

// whichArmedFail reads what confirmArmed compares and returns the runs of
// batch that fail, with the reason; every run if the read fails.
func (n *Dispatcher) whichArmedFail(st *held.Ident, batch []*held.Armed) map[*held.Armed]string {
	ops := []clientv3.Op{
		clientv3.OpGet(n.Keys.Node(n.cfg.Name)),
		clientv3.OpGet(n.IDMap.Keys().Mapping(st.Name), clientv3.WithKeysOnly()),
		clientv3.OpGet(n.Keys.PauseIdentity(st.Name), clientv3.WithKeysOnly()),
	}
	kinds := map[string]int{}
	for _, a := range batch {
		if k := a.Rec.GetSpec().GetKind(); kinds[k] == 0 {
			kinds[k] = len(ops)
			ops = append(ops, clientv3.OpGet(n.Keys.PauseKind(k), clientv3.WithKeysOnly()))
		}
	}
	first := len(ops)
	for _, a := range batch {
		ops = append(ops, clientv3.OpGet(n.Keys.Task(st.Name, a.E.ID), clientv3.WithKeysOnly()))
	}
	ctx, cancel := n.Runs.StartCtx()
	resp, err := n.Writes.Writer.Read(ctx, ops...)
	cancel()
	failed := map[*held.Armed]string{}
	if err != nil {
		for _, a := range batch {
			failed[a] = "its start could not be confirmed (" + err.Error() + ")"
		}
		return failed
	}
	get := func(i int) *clientv3.GetResponse {
		return (*clientv3.GetResponse)(resp.Responses[i].GetResponseRange())
	}
	reg, mapping, idPause := get(0), get(1), get(2)
	for i, a := range batch {
		switch task := get(first + i); {
		case len(reg.Kvs) == 0 || clientv3.LeaseID(reg.Kvs[0].Lease) != a.Lease:
			failed[a] = "this node's registration changed"
		case len(mapping.Kvs) == 0 || mapping.Kvs[0].ModRevision != a.Epoch:
			failed[a] = "its identity was mapped again"
		case len(task.Kvs) == 0 || task.Kvs[0].ModRevision != a.Rev:
			failed[a] = "the task changed"
		case len(idPause.Kvs) > 0 || len(get(kinds[a.Rec.GetSpec().GetKind()]).Kvs) > 0:
			failed[a] = "it was paused"
		}
	}
	return failed
}

// launchArmed launches the armed runs of batch, each holding one of the
// run slots taken for them (slotless: none; a run not to be called needs
// none).
func (n *Dispatcher) launchArmed(batch []*held.Armed, slotless bool) {
	n.mu.Lock()
	for _, a := range batch {
		n.checkFiringLocked(a)
		a.Flight.Slotless = slotless
		delete(n.arming.runs, a)
	}
	n.mu.Unlock()
	for _, a := range batch {
		a.Launch()
	}
}

// DisarmAll launches every armed run not launched yet, not to be called:
// the node stops. Called by Stop once the dispatcher and the starters are
// gone.
func (n *Dispatcher) DisarmAll(cause error) {
	n.mu.Lock()
	batch := make([]*held.Armed, 0, len(n.arming.runs))
	for a := range n.arming.runs {
		a.Flight.Cancel(cause)
		a.Flight.Armed = nil
		if r := a.E.Ident.Active; r != nil {
			r.FireQ = nil
		}
		batch = append(batch, a)
	}
	n.arming.heap = nil
	n.arming.n = 0
	n.mu.Unlock()
	n.launchArmed(batch, true)
}

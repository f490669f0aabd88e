package taskservice

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
)

// dispatchLoop pops due entries in order and hands them to their identity's
// starter. It starts nothing while the lease is not fresh (self-fencing).
func (n *Node) dispatchLoop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := time.Hour
		n.mu.Lock()
		fresh := n.leaseFreshLocked() && !n.draining
		now := time.Now()
		for fresh && len(n.queue) > 0 {
			e := n.queue[0]
			if e.cold() && e.due.time().Before(now.Add(n.thawAhead())) {
				// Its record is read again before it is due (thaw.go).
				n.thawLocked(e)
				continue
			}
			if e.due.time().After(now) {
				// Not due: armed ahead if it may be (arming.go).
				if wait = n.popArmableLocked(now); wait > 0 {
					break
				}
				continue
			}
			heap.Pop(&n.queue)
			e.running = true
			if e.readyAt == 0 {
				e.readyAt = e.due
			}
			n.touchLocked(e)
			// Purges go through the starters too, so that they are bounded
			// by the run slots like everything else.
			st := e.ident
			r := st.r()
			r.startQ = append(r.startQ, e)
			n.ensureStarterLocked(st)
		}
		if !fresh {
			wait = n.cfg.LeaseTTL / 20
		}
		// Armed runs fire whatever the lease: their calls check it.
		wait = min(wait, n.fireDueLocked(now))
		n.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-n.wake:
		case <-n.life.Done():
			return
		}
	}
}

// ensureStarterLocked starts st's starter unless it runs. n.mu held.
func (n *Node) ensureStarterLocked(st *identState) {
	r := st.r()
	if !r.starting && n.life.Err() == nil {
		r.starting = true
		n.wg.Add(1)
		go n.starter(st)
	}
}

// starter drains one identity's start queues in order: first the armed
// runs whose fire time has come (fireQ), then the runs given a token of
// their kind's limit (grantQ), then the start queue, and last the entries
// to arm ahead of their fire time (armQ).
func (n *Node) starter(st *identState) {
	defer n.wg.Done()
	for {
		n.mu.Lock()
		r := st.r() // stays while this starter runs (idleLocked)
		if n.life.Err() != nil {
			r.starting = false
			st.idleLocked()
			n.mu.Unlock()
			return
		}
		if len(r.fireQ) > 0 {
			n.fireBatch(st) // unlocks
			continue
		}
		q := &r.grantQ
		if len(*q) == 0 {
			q = &r.startQ
		}
		if len(*q) == 0 {
			if len(r.armQ) > 0 {
				n.armBatch(st) // unlocks
				continue
			}
			r.starting = false
			st.idleLocked()
			n.mu.Unlock()
			return
		}
		// One identity holds at most its share of the run slots; the rest
		// stay free for the other identities (identityShare). Short of
		// room for a good batch, the starter waits for its runs to end.
		room, ok := n.shareRoomLocked(st) // may unlock
		if !ok {
			continue
		}
		// Up to startBatch due entries of the identity start together:
		// their start writes go out at once (and share a Txn), then their
		// handlers are called in queue order. An entry of a kind at its
		// limit leaves the batch to wait for its kind (limits.go).
		k := min(len(*q), startBatch, room)
		batch := append([]*entry(nil), (*q)[:k]...)
		clear((*q)[:k])
		*q = (*q)[k:]
		batch = n.admitLocked(st, batch)
		r.held += len(batch)
		n.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		held := n.takeSlots(len(batch))
		if held == 0 {
			// Stopping: the batch starts nothing; its tokens and reserved
			// worker slots go back.
			n.mu.Lock()
			for _, e := range batch {
				n.releaseEntryHoldsLocked(e)
			}
			n.mu.Unlock()
			continue
		}
		if held < len(batch) {
			n.mu.Lock()
			*q = append(batch[held:len(batch):len(batch)], *q...)
			n.releaseShareLocked(st, len(batch)-held)
			n.mu.Unlock()
			batch = batch[:held]
		}
		launches := make([]func(), len(batch))
		if len(batch) == 1 {
			launches[0] = n.startAny(st, batch[0])
		} else {
			var wg sync.WaitGroup
			for i, e := range batch {
				wg.Add(1)
				go func() {
					defer wg.Done()
					launches[i] = n.startAny(st, e)
				}()
			}
			wg.Wait()
		}
		for i, launch := range launches {
			if launch != nil {
				launch()
			} else {
				<-n.slots
				// Nothing started: the identity's share, the kind's token
				// and the worker's slot go back (a run that started gives
				// them back when it ends).
				n.mu.Lock()
				n.releaseShareLocked(st, 1)
				n.releaseEntryHoldsLocked(batch[i])
				n.mu.Unlock()
			}
		}
	}
}

// shareRoomLocked returns how many more run slots st may take (its share
// of identityShare), waiting, with n.mu released, while that is too few for
// a good batch and st's runs hold some; ok is false after such a wait (n.mu
// then is not held: the caller looks at its queues again).
func (n *Node) shareRoomLocked(st *identState) (room int, ok bool) {
	r := st.r()
	share := n.identityShare()
	room = share - r.held
	if room < min(startBatch, max(1, share/4)) && r.held > 0 {
		wait := make(chan struct{})
		r.shareWait = wait
		n.mu.Unlock()
		select {
		case <-wait:
		case <-n.life.Done():
		}
		return 0, false
	}
	return room, true
}

// takeSlots takes up to k run slots: the first is waited for, the others
// are taken only if free. It returns how many it took (0 when the node
// stops while it waits).
func (n *Node) takeSlots(k int) int {
	select {
	case n.slots <- struct{}{}:
	case <-n.life.Done():
		return 0
	}
	held := 1
	for held < k {
		select {
		case n.slots <- struct{}{}:
			held++
		default:
			return held
		}
	}
	return held
}

// fireBatch launches the armed runs of st whose fire time has come, in
// order. Each is first confirmed (confirmArmed), holding nothing, so that
// the confirmations of many identities go to etcd together; then, in
// order, the confirmed ones are called, each holding a run slot and a
// share of st's. A run not to be called (disarmed, or not confirmed) is
// launched at once, holding neither. Called with n.mu held; returns with it
// released.
func (n *Node) fireBatch(st *identState) {
	r := st.r()
	var dead []*armedRun
	live := r.fireQ[:0]
	for _, a := range r.fireQ {
		n.checkFiringLocked(a)
		if a.f.ctx.Err() != nil {
			dead = append(dead, a)
		} else {
			live = append(live, a)
		}
	}
	clear(r.fireQ[len(live):])
	r.fireQ = live
	if len(dead) > 0 {
		n.mu.Unlock()
		n.launchArmed(dead, true)
		return
	}
	// The runs at the front not confirmed lately are confirmed first.
	now := time.Now()
	k := 0
	for k < len(r.fireQ) && k < startBatch && now.Sub(r.fireQ[k].confirmed) > confirmFor {
		k++
	}
	if k > 0 {
		batch := append([]*armedRun(nil), r.fireQ[:k]...)
		n.mu.Unlock()
		n.confirmArmed(st, batch)
		return
	}
	room, ok := n.shareRoomLocked(st)
	if !ok {
		return
	}
	for k < len(r.fireQ) && k < min(startBatch, room) && now.Sub(r.fireQ[k].confirmed) <= confirmFor {
		k++
	}
	batch := append([]*armedRun(nil), r.fireQ[:k]...)
	clear(r.fireQ[:k])
	r.fireQ = r.fireQ[k:]
	r.held += k
	n.mu.Unlock()
	held := n.takeSlots(k)
	if held < k {
		n.mu.Lock()
		r.fireQ = append(batch[held:k:k], r.fireQ...)
		n.releaseShareLocked(st, k-held)
		n.mu.Unlock()
		batch = batch[:held]
	}
	if held == 0 {
		return // stopping: Stop launches them (disarmAll)
	}
	n.launchArmed(batch, false)
}

// armBatch writes the starts of up to startBatch entries of st's arm
// queue ahead of their fire times (together, sharing a Txn), and registers
// the runs armed. It holds no run slot: the runs take theirs when they
// fire. Called with n.mu held; returns with it released.
func (n *Node) armBatch(st *identState) {
	r := st.r()
	k := min(len(r.armQ), startBatch)
	batch := append([]*entry(nil), r.armQ[:k]...)
	clear(r.armQ[:k])
	r.armQ = r.armQ[k:]
	n.mu.Unlock()
	var wg sync.WaitGroup
	ok := make([]bool, len(batch))
	for i, e := range batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok[i] = n.arm(e)
		}()
	}
	wg.Wait()
	n.mu.Lock()
	for _, armed := range ok {
		if !armed {
			n.armedN--
		}
	}
	n.mu.Unlock()
	n.kick()
}

// startBatch is how many due runs of one identity start together.
const startBatch = 32

// identityShare is how many run slots one identity may hold at once:
// three quarters of Workers (at least one), so that an identity with a
// large backlog of long runs leaves slots to the others.
func (n *Node) identityShare() int {
	return max(1, n.cfg.Workers-max(1, n.cfg.Workers/4))
}

// releaseShareLocked gives back k of st's slots and wakes its starter if
// it waits for them. n.mu held.
func (n *Node) releaseShareLocked(st *identState, k int) {
	r := st.r()
	r.held -= k
	if r.shareWait != nil {
		close(r.shareWait)
		r.shareWait = nil
	}
	st.idleLocked()
}

// startAny does what a due entry of either scope needs: a purge, the
// resolution of a run marker, or a run start. It returns the function that
// launches a run, or nil if none starts.
func (n *Node) startAny(st *identState, e *entry) func() {
	if e.ex().overlapOf != nil {
		n.startOverlap(e)
		return nil
	}
	n.mu.Lock()
	purge := e.purge
	n.mu.Unlock()
	if purge {
		n.purge(e)
		return nil
	}
	launch, _ := n.start(e, 0)
	return launch
}

// arm writes the start of e, due within the look-ahead, and registers its
// run as armed; false if no run was armed (e was put back or settled as a
// start that fails would be).
func (n *Node) arm(e *entry) bool {
	launch, a := n.start(e, n.cfg.LookAhead)
	if a == nil {
		if launch != nil {
			launch() // cannot happen: a run started ahead is always armed
		}
		return false
	}
	return true
}

// spawn runs f in a goroutine that Stop waits for. It is called only from
// goroutines Stop also waits for (dispatch, starters, runs), so the count is
// never raised after Stop's final wait; once the node stops it runs nothing.
func (n *Node) spawn(f func()) {
	if n.life.Err() != nil {
		return
	}
	n.runs.Add(1)
	go func() {
		defer n.runs.Done()
		f()
	}()
}

// release frees a run slot.
func (n *Node) release() { <-n.slots }

// resched queues e at its next due time, or takes it out of the queue when
// it has none. A record that carries a run marker (of no run in flight
// here) is queued at once, or at its recheck time while its result is
// awaited: its next start resolves the marker. Caller holds n.mu.
func (n *Node) reschedLocked(e *entry) {
	defer n.touchLocked(e)
	if !e.running {
		n.dropShadowLocked(e) // no run in flight: nothing to overlap
	}
	if e.gone || e.ident.lost {
		n.queue.remove(e)
		return
	}
	if e.cold() {
		// Its record is read again first; the read reschedules it.
		n.thawLocked(e)
		return
	}
	rec := e.record()
	if rec == nil {
		n.queue.remove(e)
		return
	}
	e.prio = rec.GetSpec().GetPriority()
	now := time.Now()
	if rec.Running != nil {
		e.purge = false
		n.queue.set(e, maxTime(now, e.ex().recheckAt.time()))
		e.freeze(now, n.cfg.ColdAfter)
		n.kick()
		return
	}
	e.clearAwait()
	at, purge, ok := dueTime(rec, n.cfg.Retention, n.timingLocked(rec, now))
	if !ok || (purge && e.ident.every) { // an EVERY_NODE task is purged by its canceller
		n.queue.remove(e)
		return
	}
	if !purge && n.pausedByLocked(rec, e.ident.name) != nil {
		n.parkLocked(e)
		return
	}
	n.queueAtLocked(e, at, purge)
	e.freeze(now, n.cfg.ColdAfter)
	n.kick()
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// startCtx bounds the start write of a run by the node's lease margin: a
// start that etcd applies after the node could last prove its lease live
// is never followed by a handler call (the run is resolved instead).
func (n *Node) startCtx() (context.Context, context.CancelFunc) {
	return n.startCtxFrom(n.life)
}

// startCtxFrom is startCtx under parent. The start of a run armed ahead of
// its fire time is not cancelled when the node stops: Stop waits for it,
// and then undoes it (arming.go), where a start cut short might have been
// applied and be left for the task's next owner to resolve as interrupted.
func (n *Node) startCtxFrom(parent context.Context) (context.Context, context.CancelFunc) {
	n.mu.Lock()
	d := n.renewedAt.Add(n.leaseMargin())
	n.mu.Unlock()
	return context.WithDeadline(parent, d)
}

// start writes the run marker of a due entry of any scope (fenced as its
// scope requires) and returns the function that launches its run (which
// then holds the slot), or nil. The rules every start keeps, whatever the
// scope: nothing starts while the node drains, its lease is not proven, or
// the identity is leaving; a record that still carries a run marker is never
// started over (the marker is resolved first); a run never starts before its
// fire time; one task has at most one run in flight on this node.
//
// With ahead > 0 the start is written up to ahead before the fire time
// and planned as of the fire time: the run is armed (arming.go) and
// returned as such, its handler called when it fires.
func (n *Node) start(e *entry, ahead time.Duration) (func(), *armedRun) {
	n.mu.Lock()
	st := e.ident
	if e.gone || st.lost || st.leaving || n.draining || !n.leaseFreshLocked() {
		e.running = false
		n.reschedLocked(e)
		n.mu.Unlock()
		return nil, nil
	}
	cur, snap := e.record(), n.snapLocked(e)
	now := time.Now()
	var tm timing
	if cur != nil {
		tm = n.entryTimingLocked(e, cur, now)
	}
	if cur == nil {
		e.running = false
		n.reschedLocked(e)
		n.mu.Unlock()
		return nil, nil
	}
	if cur.Running != nil {
		n.mu.Unlock()
		n.resolveMarker(e, cur, snap)
		return nil, nil
	}
	at, purge, ok := dueTime(cur, n.cfg.Retention, tm)
	if !ok || purge || at.After(now.Add(ahead)) || n.pausedByLocked(cur, st.name) != nil {
		e.running = false
		e.readyAt = 0
		n.reschedLocked(e) // (parks a paused entry)
		n.mu.Unlock()
		return nil, nil
	}
	if at.After(now) {
		tm = n.entryTimingLocked(e, cur, at) // armed: planned as of its fire time
	}
	if st.durable && snap.epoch < n.registeredRev {
		// Owned under an epoch from before this node's current registration
		// (loaded while it registered again): re-mapped first, then run.
		n.mu.Unlock()
		n.settleNotStarted(e, n.cfg.HandoffPeriod)
		n.repair(st.name)
		return nil, nil
	}
	f, ok := n.beginFlightLocked(e.ref())
	if !ok {
		// This node's earlier run of the task is still in flight (its
		// identity left and came back meanwhile): the entry waits for that
		// run to settle (endFlight queues it again).
		n.queue.remove(e)
		n.mu.Unlock()
		return nil, nil
	}
	// The run's flight carries its kind's token (limits.go) and its remote
	// worker's slot (workerwait.go) from here on.
	if e.x != nil {
		f.token, e.x.token = e.x.token, nil
		if h := e.x.ww; h != nil {
			f.reserved, h.reserved = h.reserved, nil
		}
	}
	ready := e.readyAt.time()
	reserved := f.reserved
	n.mu.Unlock()
	if reserved != nil && !reserved.Live() {
		// The worker went away since it was reserved: the run is put back,
		// due, not started for nobody.
		n.abortFlight(f, e)
		n.putBack(e)
		return nil, nil
	}

	p := planStart(cur, n.cfg.Name, n.incarnation, snap.epoch, tm)
	p.ready = ready
	if ahead > 0 {
		p.before = cur // an armed run not called is undone (arming.go)
	}
	rev, record, ok := n.writeStart(e, p, snap)
	if !ok {
		n.abortFlight(f, e)
		return nil, nil
	}
	launch := n.launcher(e, f, p, snap.epoch, rev)
	n.mu.Lock()
	record()
	e.readyAt = 0
	var a *armedRun
	switch {
	case !p.run:
		e.running = false
		n.reschedLocked(e)
	case ahead > 0:
		a = &armedRun{e: e, f: f, rec: p.rec, epoch: snap.epoch, rev: rev, lease: snap.lease, at: at, launch: launch}
		n.registerArmedLocked(a)
	default:
		n.armOverlapLocked(e, p.rec, rev, time.Time{})
	}
	n.mu.Unlock()
	if !p.run {
		n.abortFlight(f, e)
	}
	return launch, a
}

// startSnap is what a start reads of its entry under n.mu: the fences of
// its write.
type startSnap struct {
	lease    clientv3.LeaseID // the node's registration lease when the start was planned
	epoch    int64            // the identity's epoch (0 for EVERY_NODE and non-durable tasks)
	rev      int64            // the task record's revision (EVERY_NODE: the shared record's)
	progRev  int64            // EVERY_NODE: this node's progress revision
	served   int64            // EVERY_NODE: the run-now request this node served last
	manualIn bool             // EVERY_NODE: a run-now request is pending in the record
}

func (n *Node) snapLocked(e *entry) startSnap {
	s := startSnap{rev: e.rev, lease: n.leaseID}
	switch {
	case e.ident.every:
		s.progRev, s.served = e.ex().progRev, e.ex().prog.GetManualServedRev()
		s.manualIn = e.rec != nil && e.rec.ManualRequested
	case e.ident.durable:
		s.epoch = e.ident.epoch
	}
	return s
}

// writeStart writes the run marker of plan p for e, fenced as e's scope
// requires, and returns the revision the run's fence carries and a
// function that records the written state in e (called under n.mu). ok is
// false when nothing started: e was put back in the queue or handed to the
// conflict path. Every write is bounded by the lease margin (startCtx).
//
//   - IDENTITY: the task key, fenced on the identity's epoch and the task's
//     revision, through the batcher.
//   - EVERY_NODE: this node's progress key, fenced on the node's
//     registration, the shared record's revision and the progress revision.
//   - non-durable: nothing is written.
func (n *Node) writeStart(e *entry, p startPlan, snap startSnap) (int64, func(), bool) {
	st := e.ident
	switch {
	case st.every:
		served := snap.served
		if snap.manualIn && !p.rec.ManualRequested {
			served = snap.rev
		}
		np := splitEvery(p.rec, served)
		put, err := putProgress(n.keys.EveryProgress(n.cfg.Name, e.id), np)
		if err != nil {
			n.log.Error("encode EVERY_NODE progress", "task", e.id, "error", err)
			n.settleNotStarted(e, time.Second)
			return 0, nil, false
		}
		ctx, cancel := n.startCtx()
		kind := p.rec.GetSpec().GetKind()
		resp, err := n.cli.Txn(ctx).If(append(n.everyFence(e, snap.rev, snap.progRev), n.pauseFence(st.name, kind)...)...).
			Then(put).Else(n.pauseElse(st.name, kind)...).Commit()
		cancel()
		if err == nil && !resp.Succeeded && n.learnPausesFrom(st.name, kind,
			(*clientv3.GetResponse)(resp.Responses[0].GetResponseRange()), (*clientv3.GetResponse)(resp.Responses[1].GetResponseRange())) {
			n.putBack(e) // parks it: the pause is known now
			return 0, nil, false
		}
		if err != nil || !resp.Succeeded {
			if err != nil {
				n.log.Warn("start EVERY_NODE run: etcd write failed; will retry", "task", e.id, "error", err)
			}
			// The task changed (its watch brings it), this node registered
			// again, or the write's outcome is unknown: read the progress
			// again, so that a marker written after all is resolved.
			n.settleNotStarted(e, n.cfg.HandoffPeriod)
			n.spawn(func() { n.reloadEveryProgress(e) })
			return 0, nil, false
		}
		rev := resp.Header.Revision
		return rev, func() { e.rec, e.extra().prog, e.x.progRev = p.rec, np, rev }, true
	case !st.durable:
		return 0, func() { e.rec = p.rec }, true
	}
	put, err := n.keys.PutTask(p.rec)
	if err != nil {
		n.log.Error("encode task", "task", e.id, "error", err)
		n.settleNotStarted(e, time.Second)
		return 0, nil, false
	}
	// Besides the epoch and the task, a start is fenced on this node's own
	// registration, under the lease it had when the start was planned: etcd
	// can end a lease sooner than the node's last acknowledged renewal
	// promised (seen around a stalled etcd leader), and a node whose
	// registration is gone, or was renewed under a new lease since, must not
	// start runs planned under the old one, whatever its own clock says.
	parent := n.life
	if p.before != nil {
		parent = context.WithoutCancel(n.life) // armed ahead
	}
	ctx, cancel := n.startCtxFrom(parent)
	// And on the pauses of its identity and kind (pauses.go).
	kind := p.rec.GetSpec().GetKind()
	out := n.batch.do(ctx,
		append(append(n.runFence(st.name, e.id, snap.epoch, snap.rev),
			clientv3.Compare(clientv3.LeaseValue(n.nodesPrefix+n.cfg.Name), "=", int64(snap.lease))),
			n.pauseFence(st.name, kind)...),
		[]clientv3.Op{put},
		append(append(n.runElse(st.name, e.id), clientv3.OpGet(n.nodesPrefix+n.cfg.Name)), n.pauseElse(st.name, kind)...))
	cancel()
	if errors.Is(out.err, ErrTooLarge) {
		// The task's record is too large to write (one stored before its
		// fields had limits): nothing was written, and sending it again
		// every second cannot help; it is tried again after a minute, and
		// a cancel of the task (which makes it smaller) ends it.
		n.log.Error("start run: the task's record is too large to write", "identity", st.name, "task", e.id, "error", out.err)
		n.settleNotStarted(e, time.Minute)
		return 0, nil, false
	}
	if out.err != nil {
		// If the write was applied after all, the next attempt's compare
		// fails, finds this marker and resolves it (the handler was not
		// called, so the fire time runs again).
		n.log.Warn("start run: etcd write failed; will retry", "identity", st.name, "task", e.id,
			"maybe_applied", !out.notSent, "error", out.err)
		n.settleNotStarted(e, time.Second)
		return 0, nil, false
	}
	if !out.ok {
		if len(out.els) > 4 && n.learnPausesFrom(st.name, kind,
			(*clientv3.GetResponse)(out.els[3].GetResponseRange()), (*clientv3.GetResponse)(out.els[4].GetResponseRange())) {
			n.putBack(e) // parks it: the pause is known now
			return 0, nil, false
		}
		n.conflict(e, snap.epoch, out.els)
		return 0, nil, false
	}
	return out.rev, func() { e.rec, e.raw, e.rev = p.rec, "", out.rev }, true
}

// abortFlight takes a run of e that did not start out of the registry. e
// itself is put back by the caller; the task's current entry, if it is
// another one waiting for this flight (the identity was loaded again while
// the start was being written), is put back here, or it would wait forever.
func (n *Node) abortFlight(f *flight, e *entry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f.cancel(nil)
	n.releaseTokenLocked(&f.token)
	n.releaseFlightReservationLocked(f)
	if n.flights[f.ref] == f {
		delete(n.flights, f.ref)
	}
	if cur := n.entryLocked(f.ref); cur != nil && cur != e && cur.running {
		cur.running = false
		n.reschedLocked(cur)
	}
}

// launcher reports a started run's misfires and returns the function that
// calls its handler (FIRED, STARTED, then the call), or nil if the plan
// runs nothing. It is called from a goroutine Stop waits for, and counts
// the run for Stop from here on.
func (n *Node) launcher(e *entry, f *flight, p startPlan, epoch, rev int64) func() {
	ev := Event{Identity: e.ident.name, TaskID: e.id, Kind: p.rec.Spec.Kind}
	if p.misfired > 0 {
		ev.Type, ev.Count = EventMisfired, p.misfired
		n.emit(ev)
	}
	if !p.run {
		return nil
	}
	ev.RunNumber, ev.Attempt, ev.Fence, ev.Count = p.runNumber, p.attempt, Fence{Epoch: epoch, Revision: rev}, 0
	ev.FireTime, ev.Ready = p.fire, p.ready
	n.runs.Add(1)
	return func() {
		if p.before == nil || f.ctx.Err() == nil { // an armed run not called never fired
			ev.Type = EventFired
			n.emit(ev)
		}
		entered := make(chan struct{})
		// execute emits VETOED or STARTED; the identity's next run is
		// called after this one entered its handler.
		go n.execute(e, f, p, ev, entered)
		<-entered
	}
}

// runFence is the compares of a run's start and commit: the identity still
// has the epoch the run started under, and the task is as the node wrote it.
func (n *Node) runFence(id, taskID string, epoch, rev int64) []clientv3.Cmp {
	return []clientv3.Cmp{n.idmap.Fence(id, epoch), n.keys.TaskAt(id, taskID, rev)}
}

// runElse reads, when the fence fails, what failed it.
func (n *Node) runElse(id, taskID string) []clientv3.Op {
	return []clientv3.Op{clientv3.OpGet(n.idmap.Keys().Mapping(id)), clientv3.OpGet(n.keys.Task(id, taskID))}
}

// putBack puts back an entry that did not start, at its due time (or
// parked, if paused).
func (n *Node) putBack(e *entry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e.running = false
	n.reschedLocked(e)
}

// settleNotStarted puts back an entry whose start failed, to try again later.
func (n *Node) settleNotStarted(e *entry, after time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	defer n.touchLocked(e)
	e.running = false
	if e.gone || e.ident.lost {
		return
	}
	n.queue.set(e, time.Now().Add(after))
	n.kick()
}

// conflict handles a fenced write that failed: either the identity's epoch
// moved (the identity left this node, or was re-mapped to it) or the task
// changed under us (cancelled, run-now, deleted, or a marker written by a
// start whose reply was lost). A marker found there is resolved by the
// entry's next start.
func (n *Node) conflict(e *entry, epoch int64, els []*etcdserverpb.ResponseOp) {
	st := e.ident
	if len(els) > 2 && !n.ownsRegistration(els[2]) {
		// This node's registration is gone or another's (its lease ended):
		// nothing starts until the lease keeper has registered it again.
		n.log.Warn("start refused: this node's registration is no longer under its lease", "identity", st.name, "task", e.id)
		n.settleNotStarted(e, n.cfg.LeaseTTL/4)
		n.checkLease()
		return
	}
	owner, err := identity.OwnerFromResponse(st.name, (*clientv3.GetResponse)(els[0].GetResponseRange()))
	if err != nil {
		n.log.Error("decode mapping after a failed write", "identity", st.name, "error", err)
	}
	if err != nil || owner.Epoch != epoch {
		n.mu.Lock()
		e.running = false
		n.mu.Unlock()
		n.identityMoved(st, owner)
		return
	}
	kvs := els[1].GetResponseRange().GetKvs()
	n.mu.Lock()
	defer n.mu.Unlock()
	e.running = false
	if len(kvs) == 0 {
		n.removeEntryLocked(e)
		return
	}
	rec, err := pending.Decode(kvs[0].Value)
	if err != nil {
		n.log.Error("decode task after a failed write", "task", e.id, "error", err)
		n.queue.set(e, time.Now().Add(time.Second))
		return
	}
	e.rec, e.raw, e.rev = rec, "", kvs[0].ModRevision
	n.reschedLocked(e)
}

func (n *Node) removeEntryLocked(e *entry) {
	e.gone = true
	n.queue.remove(e)
	n.dropWorkerWaitLocked(e)
	n.dropShadowLocked(e)
	delete(n.pauses.parked, e)
	if e.ident.tasks.get(e.id) == e {
		e.ident.tasks.del(e.id)
	}
	n.touchLocked(e)
}

// identityMoved reacts to a failed fence: if the identity is still mapped to
// this incarnation under a newer epoch, its tasks are loaded again under
// that epoch; otherwise the identity is no longer this node's.
func (n *Node) identityMoved(st *identState, owner identity.Owner) {
	if owner.Mapped && owner.Node == n.cfg.Name && owner.Incarnation == n.incarnation {
		n.spawn(func() {
			ctx, cancel := n.etcdCtx(n.life)
			defer cancel()
			if err := n.adoptIdentity(ctx, st.name, owner.Epoch); err != nil {
				n.log.Warn("reload identity under its new epoch", "identity", st.name, "error", err)
				n.repair(st.name)
			}
		})
		return
	}
	n.mu.Lock()
	if cur := n.idents[st.name]; cur == st {
		n.dropIdentityLocked(st)
	}
	n.mu.Unlock()
	n.log.Info("identity no longer owned here", "identity", st.name, "owner", owner.Node, "epoch", owner.Epoch)
	if owner.Mapped && owner.Node == n.cfg.Name {
		// Mapped to an earlier incarnation of this name, which is gone:
		// nothing would run it. Adopt it.
		n.repair(st.name)
	}
}

// dropIdentityLocked forgets an identity: its timers stop, and a run that
// tries to start or commit for it afterwards is dropped. Its runs in flight
// go on (their results reach the new owner) and are told it left.
func (n *Node) dropIdentityLocked(st *identState) {
	st.lost = true
	for e := range st.tasks.all() {
		n.queue.remove(e)
		n.dropShadowLocked(e)
		delete(n.pauses.parked, e)
		e.counted = false
	}
	n.forgetWaitingLocked(st)
	if r := st.run; r != nil {
		r.startQ, r.grantQ = nil, nil
	}
	delete(n.idents, st.name)
	n.identityLeftFlightsLocked(st.name)
	n.voter.Forget(st.name) // a move clears the old node's votes
}

// adoptOwned resolves, at start, every identity still mapped to this node's
// name (contract §5.4): each is re-mapped to this incarnation under a new epoch
// (which fences anything the previous incarnation still had in flight), its
// tasks are loaded, and runs left marked running become INTERRUPTED.
func (n *Node) adoptOwned(ctx context.Context) error {
	cctx, cancel := n.etcdCtx(ctx)
	ids, err := n.idmap.ListOwned(cctx, n.cfg.Name)
	cancel()
	if err != nil {
		return err
	}
	// Identities go in batches: their mappings read in one Txn, re-mapped
	// in one Txn, and their tasks read in one Txn, so that a node with
	// many identities is back at once (contract §5.4).
	size := max(1, min(200, (n.cfg.MaxTxnOps-8)/2))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, 4)
	)
	for len(ids) > 0 {
		batch := ids[:min(size, len(ids))]
		ids = ids[len(batch):]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := n.adoptBatch(ctx, batch); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// adoptBatch adopts identities of this node's ownership index in three
// Txns; an identity whose mapping changed meanwhile is adopted on its own.
func (n *Node) adoptBatch(ctx context.Context, ids []string) error {
	keys := n.idmap.Keys()
	gets := make([]clientv3.Op, len(ids))
	for i, id := range ids {
		gets[i] = clientv3.OpGet(keys.Mapping(id))
	}
	cctx, cancel := n.etcdCtx(ctx)
	read, err := n.cli.Txn(cctx).Then(gets...).Commit()
	cancel()
	if err != nil {
		return fmt.Errorf("read mappings: %w", err)
	}
	var mine []identity.Owner
	for i, id := range ids {
		owner, err := identity.OwnerFromResponse(id, (*clientv3.GetResponse)(read.Responses[i].GetResponseRange()))
		if err != nil {
			return err
		}
		if owner.Mapped && owner.Node == n.cfg.Name {
			mine = append(mine, owner) // else: moved away; the index entry is stale
		}
	}
	if len(mine) == 0 {
		return nil
	}
	cmps := []clientv3.Cmp{n.registeredCmp()}
	var ops []clientv3.Op
	for _, o := range mine {
		cmps = append(cmps, n.idmap.Fence(o.Identity, o.Epoch))
		ops = append(ops, n.idmap.AssignOps(o.Identity, o.Node, n.cfg.Name, n.incarnation)...)
	}
	cctx, cancel = n.etcdCtx(ctx)
	resp, err := n.cli.Txn(cctx).If(cmps...).Then(ops...).Commit()
	cancel()
	if err != nil {
		return fmt.Errorf("re-map identities: %w", err)
	}
	if !resp.Succeeded {
		for _, o := range mine {
			if err := n.adoptOne(ctx, o.Identity); err != nil {
				return err
			}
		}
		return nil
	}
	epoch := resp.Header.Revision
	// The tasks of the batch, at one revision; an identity with more than
	// a page of tasks is read on its own.
	loads := make([]clientv3.Op, len(mine))
	for i, o := range mine {
		loads[i] = clientv3.OpGet(n.keys.Tasks(o.Identity), clientv3.WithPrefix(), clientv3.WithLimit(1000))
	}
	cctx, cancel = n.etcdCtx(ctx)
	tasks, err := n.cli.Txn(cctx).Then(loads...).Commit()
	cancel()
	if err != nil {
		return fmt.Errorf("load tasks: %w", err)
	}
	for i, o := range mine {
		rr := tasks.Responses[i].GetResponseRange()
		if rr.More {
			cctx, cancel := n.etcdCtx(ctx)
			err := n.adoptIdentity(cctx, o.Identity, epoch)
			cancel()
			if err != nil {
				return err
			}
			continue
		}
		stored, err := n.storedOf(rr.Kvs)
		if err != nil {
			return err
		}
		n.installTasks(o.Identity, epoch, stored, tasks.Header.Revision)
	}
	return nil
}

func (n *Node) adoptOne(ctx context.Context, id string) error {
	for range 3 {
		cctx, cancel := n.etcdCtx(ctx)
		owner, err := n.idmap.Get(cctx, id)
		if err != nil {
			cancel()
			return err
		}
		if !owner.Mapped || owner.Node != n.cfg.Name {
			cancel()
			return nil // moved away; the index entry is stale
		}
		epoch, ok, err := n.idmap.Reassign(cctx, owner, n.cfg.Name, n.incarnation, n.registeredCmp())
		cancel()
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		cctx, cancel = n.etcdCtx(ctx)
		err = n.adoptIdentity(cctx, id, epoch)
		cancel()
		return err
	}
	return fmt.Errorf("adopt identity %q: mapping kept changing", id)
}

// adoptIdentity loads every task of id under epoch into the queue. Entries
// with a run in flight here are left alone; run markers of runs not in
// flight here are resolved.
//
// An epoch older than the node's current registration (the node registered
// again after losing its lease, and the identity has not been re-mapped
// since) is not used: the identity is re-mapped to this registration first
// (adoptOne), so that every run this node starts is under an epoch written
// while its current registration stood.
func (n *Node) adoptIdentity(ctx context.Context, id string, epoch int64) error {
	n.mu.Lock()
	stale := epoch < n.registeredRev
	n.mu.Unlock()
	if stale {
		return n.adoptOne(ctx, id)
	}
	stored, rev, err := n.store.LoadAll(ctx, id)
	if err != nil {
		return err
	}
	n.installTasks(id, epoch, stored, rev)
	return nil
}

// installTasks puts stored tasks of id, owned under epoch, into the queue.
// With loadRev > 0, stored is every task of the identity as of that
// revision, and entries it lacks are removed unless they were written
// after it (a task scheduled while the load was under way). An entry whose
// task has a run in flight here waits for that run to settle; a run marker
// of no run in flight here is resolved by the entry's next start.
func (n *Node) installTasks(id string, epoch int64, stored []pending.Stored, loadRev int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.idents[id]
	if st == nil || st.lost {
		st = &identState{name: id, durable: true}
		n.idents[id] = st
		n.voter.Track(id)
	}
	if epoch < st.epoch {
		return // a newer adoption already happened
	}
	adopted := epoch > st.epoch // loaded by a new owner: at start, adoption, a move
	st.epoch = epoch
	seen := make(map[string]bool, len(stored))
	for _, s := range stored {
		tid := s.TaskID()
		seen[tid] = true
		e := st.tasks.get(tid)
		if e == nil {
			e = &entry{ident: st, id: tid, idx: -1}
			st.tasks.put(e)
		}
		if e.running && s.Rev > e.rev && !n.unwaitLocked(e) { // a waiting run takes the change now
			n.taskChangedLocked(e) // an armed run is not called
		}
		if e.running || ((e.rec != nil || e.raw != "" || e.cold()) && e.rev > s.Rev) {
			continue
		}
		if s.Rec == nil && n.installColdLocked(e, &s) {
			continue
		}
		if s.Rec == nil {
			// Glanced at but needed now after all (in flight here, or
			// paused): decoded whole.
			rec, err := pending.Decode(s.Raw)
			if err != nil {
				n.log.Error("a stored task cannot be decoded; left out", "identity", id, "task", e.id, "error", err)
				continue
			}
			s.Rec = rec
		}
		e.rec, e.raw, e.rev = s.Rec, "", s.Rev
		// A reload may bring what an entry waits for (a handoff entry comes
		// with a result forwarded by the previous owner): look again now,
		// not at the next recheck.
		if e.x != nil {
			e.x.recheckAt = 0
		}
		if n.inFlightLocked(e.ref()) {
			e.running = true
			n.queue.remove(e)
			n.touchLocked(e)
			continue
		}
		if adopted {
			n.takeLocked(e) // what passed while the identity moved is caught up
		} else {
			n.reschedLocked(e)
		}
	}
	if loadRev > 0 {
		for e := range st.tasks.all() {
			if !seen[e.id] && !e.running && e.rev <= loadRev {
				n.removeEntryLocked(e)
			}
		}
	}
}

// purge deletes a finished task at the end of its retention.
func (n *Node) purge(e *entry) {
	n.mu.Lock()
	st, rec, rev, epoch := e.ident, e.record(), e.rev, e.ident.epoch
	n.mu.Unlock()
	if !st.durable || rec == nil {
		if !st.every && rec != nil {
			n.dropLocalRefs(rec, rec.GetSpec().GetCalendars())
		}
		n.mu.Lock()
		n.removeEntryLocked(e)
		n.mu.Unlock()
		return
	}
	ctx, cancel := n.etcdCtx(n.life)
	resp, err := n.cli.Txn(ctx).
		If(n.idmap.Fence(st.name, epoch), n.keys.TaskAt(st.name, e.id, rev)).
		Then(n.keys.DeleteTaskOps(rec)...).
		Else(clientv3.OpGet(n.idmap.Keys().Mapping(st.name)), clientv3.OpGet(n.keys.Task(st.name, e.id))).
		Commit()
	cancel()
	if err != nil {
		n.settleNotStarted(e, time.Minute)
		return
	}
	if !resp.Succeeded {
		n.conflict(e, epoch, resp.Responses)
		return
	}
	n.mu.Lock()
	n.removeEntryLocked(e)
	empty := st.tasks.len() == 0
	n.mu.Unlock()
	if empty {
		n.voter.Recheck(st.name) // its idle unmapping may go ahead now
	}
}

// jitter is the random source of retry backoff.
func jitter() float64 { return rand.Float64() }

package dispatch

import (
	"container/heap"
	"sync"
	"time"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
)

// DispatchLoop pops due entries in order and hands them to their identity's
// starter. It starts nothing while the lease is not fresh (self-fencing).
func (n *Dispatcher) DispatchLoop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := time.Hour
		n.mu.Lock()
		fresh := n.Member.Fresh() && !n.Phase.Draining
		now := time.Now()
		for fresh && len(n.Queue) > 0 {
			e := n.Queue[0]
			if e.Cold() && e.Due.Time().Before(now.Add(n.thawAhead())) {
				// Its record is read again before it is due (thaw.go).
				n.thawLocked(e)
				continue
			}
			if e.Due.Time().After(now) {
				// Not due: armed ahead if it may be (arming.go).
				if wait = n.popArmableLocked(now); wait > 0 {
					break
				}
				continue
			}
			heap.Pop(&n.Queue)
			e.Running = true
			if e.ReadyAt == 0 {
				e.ReadyAt = e.Due
			}
			n.TouchLocked(e)
			// Purges go through the starters too, so that they are bounded
			// by the run slots like everything else.
			st := e.Ident
			r := st.Activate()
			r.StartQ = append(r.StartQ, e)
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
		case <-n.Life.Ctx.Done():
			return
		}
	}
}

// ensureStarterLocked starts st's starter unless it runs. n.mu held.
func (n *Dispatcher) ensureStarterLocked(st *held.Ident) {
	r := st.Activate()
	if !r.Starting && n.Life.Ctx.Err() == nil {
		r.Starting = true
		n.Life.Starters.Add(1)
		go n.starter(st)
	}
}

// starter drains one identity's start queues in order: first the armed
// runs whose fire time has come (fireQ), then the runs given a token of
// their kind's limit (grantQ), then the start queue, and last the entries
// to arm ahead of their fire time (armQ).
func (n *Dispatcher) starter(st *held.Ident) {
	defer n.Life.Starters.Done()
	for {
		n.mu.Lock()
		r := st.Activate() // stays while this starter runs (DropIfIdle)
		if n.Life.Ctx.Err() != nil {
			r.Starting = false
			st.DropIfIdle()
			n.mu.Unlock()
			return
		}
		if len(r.FireQ) > 0 {
			n.fireBatch(st) // unlocks
			continue
		}
		q := &r.GrantQ
		if len(*q) == 0 {
			q = &r.StartQ
		}
		if len(*q) == 0 {
			if len(r.ArmQ) > 0 {
				n.armBatch(st) // unlocks
				continue
			}
			r.Starting = false
			st.DropIfIdle()
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
		batch := append([]*held.Entry(nil), (*q)[:k]...)
		clear((*q)[:k])
		*q = (*q)[k:]
		batch = n.admitLocked(st, batch)
		r.Held += len(batch)
		n.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		gotSlots := n.takeSlots(len(batch))
		if gotSlots == 0 {
			// Stopping: the batch starts nothing; its tokens and reserved
			// worker slots go back.
			n.mu.Lock()
			for _, e := range batch {
				n.releaseEntryHoldsLocked(e)
			}
			n.mu.Unlock()
			continue
		}
		if gotSlots < len(batch) {
			n.mu.Lock()
			*q = append(batch[gotSlots:len(batch):len(batch)], *q...)
			n.ReleaseShareLocked(st, len(batch)-gotSlots)
			n.mu.Unlock()
			batch = batch[:gotSlots]
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
				n.ReleaseShareLocked(st, 1)
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
func (n *Dispatcher) shareRoomLocked(st *held.Ident) (room int, ok bool) {
	r := st.Activate()
	share := n.identityShare()
	room = share - r.Held
	if room < min(startBatch, max(1, share/4)) && r.Held > 0 {
		wait := make(chan struct{})
		r.ShareWait = wait
		n.mu.Unlock()
		select {
		case <-wait:
		case <-n.Life.Ctx.Done():
		}
		return 0, false
	}
	return room, true
}

// takeSlots takes up to k run slots: the first is waited for, the others
// are taken only if free. It returns how many it took (0 when the node
// stops while it waits).
func (n *Dispatcher) takeSlots(k int) int {
	select {
	case n.slots <- struct{}{}:
	case <-n.Life.Ctx.Done():
		return 0
	}
	gotSlots := 1
	for gotSlots < k {
		select {
		case n.slots <- struct{}{}:
			gotSlots++
		default:
			return gotSlots
		}
	}
	return gotSlots
}

// fireBatch launches the armed runs of st whose fire time has come, in
// order. Each is first confirmed (confirmArmed), holding nothing, so that
// the confirmations of many identities go to etcd together; then, in
// order, the confirmed ones are called, each holding a run slot and a
// share of st's. A run not to be called (disarmed, or not confirmed) is
// launched at once, holding neither. Called with n.mu held; returns with it
// released.
func (n *Dispatcher) fireBatch(st *held.Ident) {
	r := st.Activate()
	var dead []*held.Armed
	live := r.FireQ[:0]
	for _, a := range r.FireQ {
		n.checkFiringLocked(a)
		if a.Flight.Ctx.Err() != nil {
			dead = append(dead, a)
		} else {
			live = append(live, a)
		}
	}
	clear(r.FireQ[len(live):])
	r.FireQ = live
	if len(dead) > 0 {
		n.mu.Unlock()
		n.launchArmed(dead, true)
		return
	}
	// The runs at the front not confirmed lately are confirmed first.
	now := time.Now()
	k := 0
	for k < len(r.FireQ) && k < startBatch && now.Sub(r.FireQ[k].Confirmed) > confirmFor {
		k++
	}
	if k > 0 {
		batch := append([]*held.Armed(nil), r.FireQ[:k]...)
		n.mu.Unlock()
		n.confirmArmed(st, batch)
		return
	}
	room, ok := n.shareRoomLocked(st)
	if !ok {
		return
	}
	for k < len(r.FireQ) && k < min(startBatch, room) && now.Sub(r.FireQ[k].Confirmed) <= confirmFor {
		k++
	}
	batch := append([]*held.Armed(nil), r.FireQ[:k]...)
	clear(r.FireQ[:k])
	r.FireQ = r.FireQ[k:]
	r.Held += k
	n.mu.Unlock()
	gotSlots := n.takeSlots(k)
	if gotSlots < k {
		n.mu.Lock()
		r.FireQ = append(batch[gotSlots:k:k], r.FireQ...)
		n.ReleaseShareLocked(st, k-gotSlots)
		n.mu.Unlock()
		batch = batch[:gotSlots]
	}
	if gotSlots == 0 {
		return // stopping: Stop launches them (DisarmAll)
	}
	n.launchArmed(batch, false)
}

// armBatch writes the starts of up to startBatch entries of st's arm
// queue ahead of their fire times (together, sharing a Txn), and registers
// the runs armed. It holds no run slot: the runs take theirs when they
// fire. Called with n.mu held; returns with it released.
func (n *Dispatcher) armBatch(st *held.Ident) {
	r := st.Activate()
	k := min(len(r.ArmQ), startBatch)
	batch := append([]*held.Entry(nil), r.ArmQ[:k]...)
	clear(r.ArmQ[:k])
	r.ArmQ = r.ArmQ[k:]
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
			n.arming.n--
		}
	}
	n.mu.Unlock()
	n.Kick()
}

// startBatch is how many due runs of one identity start together.
const startBatch = 32

// identityShare is how many run slots one identity may hold at once:
// three quarters of Workers (at least one), so that an identity with a
// large backlog of long runs leaves slots to the others.
func (n *Dispatcher) identityShare() int {
	return max(1, n.cfg.Workers-max(1, n.cfg.Workers/4))
}

// ReleaseShareLocked gives back k of st's slots and wakes its starter if
// it waits for them. n.mu held.
func (n *Dispatcher) ReleaseShareLocked(st *held.Ident, k int) {
	r := st.Activate()
	r.Held -= k
	if r.ShareWait != nil {
		close(r.ShareWait)
		r.ShareWait = nil
	}
	st.DropIfIdle()
}

// startAny does what a due entry of either scope needs: a purge, the
// resolution of a run marker, or a run start. It returns the function that
// launches a run, or nil if none starts.
func (n *Dispatcher) startAny(st *held.Ident, e *held.Entry) func() {
	if e.Ex().OverlapOf != nil {
		n.Runs.StartOverlap(e)
		return nil
	}
	n.mu.Lock()
	purge := e.Purge
	n.mu.Unlock()
	if purge {
		n.purge(e)
		return nil
	}
	launch, _ := n.Runs.Start(e, 0)
	return launch
}

// arm writes the start of e, due within the look-ahead, and registers its
// run as armed; false if no run was armed (e was put back or settled as a
// start that fails would be).
func (n *Dispatcher) arm(e *held.Entry) bool {
	launch, a := n.Runs.Start(e, n.cfg.LookAhead)
	if a == nil {
		if launch != nil {
			launch() // cannot happen: a run started ahead is always armed
		}
		return false
	}
	return true
}

// Spawn runs f in a goroutine that Stop waits for. It is called only from
// goroutines Stop also waits for (dispatch, starters, runs), so the count is
// never raised after Stop's final wait; once the node stops it runs nothing.
func (n *Dispatcher) Spawn(f func()) {
	if n.Life.Ctx.Err() != nil {
		return
	}
	n.Life.Runs.Add(1)
	go func() {
		defer n.Life.Runs.Done()
		f()
	}()
}

// Release frees a run slot.
func (n *Dispatcher) Release() { <-n.slots }

// resched queues e at its next due time, or takes it out of the queue when
// it has none. A record that carries a run marker (of no run in flight
// here) is queued at once, or at its recheck time while its result is
// awaited: its next start resolves the marker. Caller holds n.mu.
func (n *Dispatcher) ReschedLocked(e *held.Entry) {
	defer n.TouchLocked(e)
	if !e.Running {
		n.Runs.DropShadowLocked(e) // no run in flight: nothing to overlap
	}
	if e.Gone || e.Ident.Lost {
		n.Queue.Remove(e)
		return
	}
	if e.Cold() {
		// Its record is read again first; the read reschedules it.
		n.thawLocked(e)
		return
	}
	rec := e.Record()
	if rec == nil {
		n.Queue.Remove(e)
		return
	}
	e.Prio = rec.GetSpec().GetPriority()
	now := time.Now()
	if rec.Running != nil {
		e.Purge = false
		n.Queue.Set(e, maxTime(now, e.Ex().RecheckAt.Time()))
		e.Freeze(now, n.cfg.ColdAfter)
		n.Kick()
		return
	}
	e.ClearAwait()
	at, purge, ok := record.Due(rec, n.cfg.Retention, n.TimingLocked(rec, now))
	if !ok || (purge && !e.Ident.Scope.PurgesFinished()) {
		n.Queue.Remove(e)
		return
	}
	if !purge && n.PausedByLocked(rec, e.Ident.Name) != nil {
		n.parkLocked(e)
		return
	}
	n.queueAtLocked(e, at, purge)
	e.Freeze(now, n.cfg.ColdAfter)
	n.Kick()
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// purge deletes a finished task at the end of its retention.
func (n *Dispatcher) purge(e *held.Entry) {
	n.mu.Lock()
	st, rec, rev, epoch := e.Ident, e.Record(), e.Rev, e.Ident.Epoch
	n.mu.Unlock()
	n.Runs.PurgeRecord(st.Scope, e, rec, rev, epoch)
}

// RemovePurged takes a purged task's entry out of the node.
func (n *Dispatcher) RemovePurged(e *held.Entry) {
	n.mu.Lock()
	n.RemoveEntryLocked(e)
	n.mu.Unlock()
}

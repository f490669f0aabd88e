// Package vote reports an identity's active status with a delay, as
// Darkstar's task service did (contract §7).
//
// A node counts, per identity, the tasks pending or running on it; the
// identity is active there while the count is above zero. A change of
// status is voted only after Delay, and only if it has not flipped back in
// the meantime: a change that reverses a queued one cancels it and nothing
// is sent. After an inactive vote, Idle is called once the identity has
// stayed inactive for RemoveDelay, so that its owner can unmap it.
//
// Guarantee: for any sequence of count changes, at most one vote is sent
// per Delay window and the last vote sent equals the status that held for
// the whole Delay before it.
//
// Lock: a Voter's mutex guards its identities' states and the deadlines
// queued; the vote and idle callbacks are called without it.
package vote

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Voter holds the counts of one node. Create it with New; Run drives it.
type Voter struct {
	delay, removeDelay time.Duration
	vote               func(id string, active bool)
	idle               func(id string)
	now                func() time.Time

	mu  sync.Mutex
	ids map[string]*state
	due deadlines // vote and idle times queued (stale ones are skipped)
	// wakeAt is when Run's timer next fires; a new deadline before it
	// wakes Run, a later one does not.
	wakeAt time.Time
	wake   chan struct{}
}

type state struct {
	count    int
	known    bool // a vote was sent (or the status is otherwise known)
	reported bool // the last status voted
	voteAt   time.Time
	idleAt   time.Time
}

// New returns a voter that calls vote for each status change and idle for
// each identity inactive for removeDelay after its inactive vote. Both are
// called from Run's goroutine, never with the voter's lock held.
func New(delay, removeDelay time.Duration, vote func(id string, active bool), idle func(id string)) *Voter {
	return newVoter(delay, removeDelay, vote, idle, time.Now)
}

func newVoter(delay, removeDelay time.Duration, vote func(string, bool), idle func(string), now func() time.Time) *Voter {
	return &Voter{
		delay: delay, removeDelay: removeDelay, vote: vote, idle: idle, now: now,
		ids: map[string]*state{}, wake: make(chan struct{}, 1),
	}
}

// Track starts counting id (newly owned) with a count of zero, and queues a
// vote of its current status after the delay, whatever it turns out to be:
// the new owner states the identity's status once.
func (v *Voter) Track(id string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.ids[id]; ok {
		return
	}
	s := &state{voteAt: v.now().Add(v.delay)}
	v.ids[id] = s
	v.arm(id, s)
}

// Add changes id's count by delta (+1 when a task becomes pending or
// running on the node, -1 when it stops being either).
func (v *Voter) Add(id string, delta int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.ids[id]
	if s == nil {
		if delta <= 0 {
			// Nothing counted here (a late finish after Forget, say):
			// keep no state, so the table only holds ids with work.
			return
		}
		s = &state{}
		v.ids[id] = s
	}
	was := s.count > 0
	s.count += delta
	if s.count < 0 {
		s.count = 0
	}
	now := s.count > 0
	if was == now {
		return
	}
	s.idleAt = time.Time{}
	switch {
	case !s.known:
		// No status stated yet: the first vote states the one that has
		// held for the whole delay, so each change restarts the wait.
		s.voteAt = v.now().Add(v.delay)
	case now == s.reported:
		s.voteAt = time.Time{} // flipped back: the queued vote is cancelled
		if !now {
			s.idleAt = v.now().Add(v.removeDelay)
		}
	default:
		s.voteAt = v.now().Add(v.delay)
	}
	v.arm(id, s)
}

// Recheck queues another idle call for id if it is inactive and its last
// vote said so: the caller found a reason that an earlier idle call could
// not act on has gone (the identity's last finished task was purged).
func (v *Voter) Recheck(id string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.ids[id]
	if s == nil || s.count > 0 || !s.known || s.reported || !s.idleAt.IsZero() {
		return
	}
	s.idleAt = v.now().Add(v.removeDelay)
	v.arm(id, s)
}

// Forget drops id without a vote (the identity moved away: its old node's
// votes are cleared, contract §7.3).
func (v *Voter) Forget(id string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.ids, id) // its queued deadlines are skipped as stale
}

// Active reports the last status voted for id, and whether one was.
func (v *Voter) Active(id string) (active, known bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.ids[id]
	if s == nil {
		return false, false
	}
	return s.reported, s.known
}

// Count returns id's current count.
func (v *Voter) Count(id string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s := v.ids[id]; s != nil {
		return s.count
	}
	return 0
}

// arm queues s's deadlines; caller holds v.mu.
func (v *Voter) arm(id string, s *state) {
	for _, t := range []time.Time{s.voteAt, s.idleAt} {
		if t.IsZero() {
			continue
		}
		heap.Push(&v.due, deadline{at: t, id: id})
		if v.wakeAt.IsZero() || t.Before(v.wakeAt) {
			v.wakeAt = t
			v.kick()
		}
	}
}

// deadline is a time at which an id may have a vote or idle call due.
type deadline struct {
	at time.Time
	id string
}

// deadlines is a min-heap of deadlines.
type deadlines []deadline

func (d deadlines) Len() int           { return len(d) }
func (d deadlines) Less(i, j int) bool { return d[i].at.Before(d[j].at) }
func (d deadlines) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *deadlines) Push(x any)        { *d = append(*d, x.(deadline)) }
func (d *deadlines) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}

func (v *Voter) kick() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// Run sends votes and idle calls when they fall due, until ctx ends.
func (v *Voter) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := v.step(v.now())
		wait := time.Hour
		if !next.IsZero() {
			wait = time.Until(next)
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-v.wake:
		case <-ctx.Done():
			return
		}
	}
}

// step carries out what is due at now and returns the next due time.
func (v *Voter) step(now time.Time) time.Time {
	type action struct {
		id     string
		vote   bool
		active bool
	}
	var due []action
	v.mu.Lock()
	for len(v.due) > 0 && !now.Before(v.due[0].at) {
		id := heap.Pop(&v.due).(deadline).id
		s := v.ids[id]
		if s == nil {
			continue // forgotten
		}
		if !s.voteAt.IsZero() && !now.Before(s.voteAt) {
			s.voteAt = time.Time{}
			active := s.count > 0
			if !s.known || active != s.reported {
				s.known, s.reported = true, active
				due = append(due, action{id: id, vote: true, active: active})
			}
			if !active {
				s.idleAt = now.Add(v.removeDelay)
				heap.Push(&v.due, deadline{at: s.idleAt, id: id})
			}
		}
		if !s.idleAt.IsZero() && !now.Before(s.idleAt) {
			s.idleAt = time.Time{}
			if s.count == 0 && s.known && !s.reported {
				due = append(due, action{id: id})
			}
		}
	}
	var next time.Time
	if len(v.due) > 0 {
		next = v.due[0].at
	}
	v.wakeAt = next
	v.mu.Unlock()
	for _, a := range due {
		if a.vote {
			v.vote(a.id, a.active)
		} else {
			v.idle(a.id)
		}
	}
	return next
}

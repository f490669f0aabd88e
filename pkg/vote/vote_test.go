package vote

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

const (
	testDelay  = 100 * time.Millisecond
	testRemove = 70 * time.Millisecond
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

type voteRec struct {
	id     string
	active bool
	at     time.Time
}

type idleRec struct {
	id string
	at time.Time
}

// harness drives a voter on a fake clock and records what it calls.
type harness struct {
	t     *time.Time
	v     *Voter
	votes []voteRec
	idles []idleRec
}

func newHarness(delay, removeDelay time.Duration) *harness {
	now := t0
	h := &harness{t: &now}
	h.v = newVoter(delay, removeDelay,
		func(id string, active bool) { h.votes = append(h.votes, voteRec{id, active, *h.t}) },
		func(id string) { h.idles = append(h.idles, idleRec{id, *h.t}) },
		func() time.Time { return *h.t })
	return h
}

// at moves the fake clock to t0+d (never backwards).
func (h *harness) at(d time.Duration) *harness {
	t := t0.Add(d)
	if t.Before(*h.t) {
		panic("fake clock moved backwards")
	}
	*h.t = t
	return h
}

// step moves the clock to t0+d and runs what is due there.
func (h *harness) step(d time.Duration) time.Time {
	h.at(d)
	return h.v.step(*h.t)
}

func (h *harness) add(id string, deltas ...int) {
	for _, d := range deltas {
		h.v.Add(id, d)
	}
}

func (h *harness) takeVotes() []voteRec {
	v := h.votes
	h.votes = nil
	return v
}

func (h *harness) takeIdles() []idleRec {
	i := h.idles
	h.idles = nil
	return i
}

func TestTrackBurstVotesOnce(t *testing.T) {
	for _, n := range []int{1, 5} {
		t.Run(fmt.Sprintf("adds=%d", n), func(t *testing.T) {
			h := newHarness(testDelay, testRemove)
			h.v.Track("a")
			for range n {
				h.add("a", +1)
			}
			if next := h.step(0); !next.Equal(t0.Add(testDelay)) {
				t.Fatalf("next due = %v, want %v", next, t0.Add(testDelay))
			}
			h.step(testDelay - 1)
			if got := h.takeVotes(); len(got) != 0 {
				t.Fatalf("votes before the delay: %v", got)
			}
			if a, k := h.v.Active("a"); k {
				t.Fatalf("Active before any vote = %v, known", a)
			}
			h.step(testDelay)
			if got := h.takeVotes(); len(got) != 1 || got[0].id != "a" || !got[0].active {
				t.Fatalf("votes at the delay = %v, want one active vote for a", got)
			}
			if a, k := h.v.Active("a"); !a || !k {
				t.Fatalf("Active = %v,%v, want true,true", a, k)
			}
			if next := h.step(10 * testDelay); !next.IsZero() {
				t.Fatalf("next due after the vote = %v, want none", next)
			}
			if got := h.takeVotes(); len(got) != 0 {
				t.Fatalf("extra votes: %v", got)
			}
			if got := h.takeIdles(); len(got) != 0 {
				t.Fatalf("idle for an active identity: %v", got)
			}
		})
	}
}

func TestInactiveVoteThenIdle(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pendAt   time.Duration // >0: an Add(+1) at this time after the inactive vote
		wantIdle bool
	}{
		{name: "stays idle", wantIdle: true},
		{name: "pending during remove delay", pendAt: testRemove / 2},
		{name: "pending just before remove delay", pendAt: testRemove - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(testDelay, testRemove)
			h.v.Track("a")
			h.add("a", 1, 1, 1, 1, 1)
			h.step(testDelay)
			if got := h.takeVotes(); len(got) != 1 || !got[0].active {
				t.Fatalf("votes = %v, want one active", got)
			}
			done := 3 * testDelay // the tasks finish
			h.at(done)
			h.add("a", -1, -1, -1, -1, -1)
			h.step(done + testDelay - 1)
			if got := h.takeVotes(); len(got) != 0 {
				t.Fatalf("votes before the delay: %v", got)
			}
			voted := done + testDelay
			h.step(voted)
			if got := h.takeVotes(); len(got) != 1 || got[0].active {
				t.Fatalf("votes = %v, want one inactive", got)
			}
			if a, k := h.v.Active("a"); a || !k {
				t.Fatalf("Active = %v,%v, want false,true", a, k)
			}
			if tc.pendAt > 0 {
				h.at(voted + tc.pendAt)
				h.add("a", +1)
			}
			h.step(voted + testRemove - 1)
			if got := h.takeIdles(); len(got) != 0 {
				t.Fatalf("idle before the remove delay: %v", got)
			}
			h.step(voted + testRemove)
			h.step(voted + 10*testRemove + 10*testDelay)
			idles := h.takeIdles()
			if !tc.wantIdle {
				if len(idles) != 0 {
					t.Fatalf("idle although a task became pending: %v", idles)
				}
				if got := h.takeVotes(); len(got) != 1 || !got[0].active {
					t.Fatalf("votes = %v, want one active vote for the new task", got)
				}
				return
			}
			if len(idles) != 1 || idles[0].id != "a" || !idles[0].at.Equal(t0.Add(voted+testRemove)) {
				t.Fatalf("idles = %v, want one for a at the remove delay", idles)
			}
			if got := h.takeVotes(); len(got) != 0 {
				t.Fatalf("extra votes: %v", got)
			}
		})
	}
}

func TestFlipBackCancels(t *testing.T) {
	const d = testDelay
	type op struct {
		at    time.Duration // offset from the start of the sequence
		delta int
	}
	for _, tc := range []struct {
		name     string
		reported bool // status voted before the sequence
		ops      []op
		want     []bool        // votes after the sequence
		wantAt   time.Duration // offset of the (single) vote, if any
	}{
		{name: "inactive: +1-1+1-1", reported: false,
			ops: []op{{0, +1}, {10, -1}, {20, +1}, {d - 1, -1}}},
		{name: "inactive: +1-1 at once", reported: false,
			ops: []op{{0, +1}, {0, -1}}},
		{name: "active: -1+1", reported: true,
			ops: []op{{0, -1}, {d - 1, +1}}},
		{name: "active: -1+1-1+1", reported: true,
			ops: []op{{0, -1}, {30, +1}, {40, -1}, {50, +1}}},
		{name: "inactive: +1-1+1", reported: false,
			ops: []op{{0, +1}, {20, -1}, {60, +1}}, want: []bool{true}, wantAt: 60 + d},
		{name: "active: -1+1-1", reported: true,
			ops: []op{{0, -1}, {20, +1}, {60, -1}}, want: []bool{false}, wantAt: 60 + d},
		{name: "inactive: +1 +1 -1 (still active)", reported: false,
			ops: []op{{0, +1}, {20, +1}, {60, -1}}, want: []bool{true}, wantAt: d},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(testDelay, testRemove)
			h.v.Track("a")
			if tc.reported {
				h.add("a", +1)
			}
			h.step(d)
			if got := h.takeVotes(); len(got) != 1 || got[0].active != tc.reported {
				t.Fatalf("setup votes = %v, want one %v", got, tc.reported)
			}
			start := 2 * d
			for _, o := range tc.ops {
				h.step(start + o.at) // steps interleaved with the flips
				h.add("a", o.delta)
			}
			last := start + tc.ops[len(tc.ops)-1].at
			if tc.want != nil {
				h.step(start + tc.wantAt - 1)
				if got := h.takeVotes(); len(got) != 0 {
					t.Fatalf("votes before the delay from the last flip: %v", got)
				}
				h.step(start + tc.wantAt)
			}
			h.step(last + 10*d)
			votes := h.takeVotes()
			if len(votes) != len(tc.want) {
				t.Fatalf("votes = %v, want %v", votes, tc.want)
			}
			for i, v := range votes {
				if v.active != tc.want[i] || !v.at.Equal(t0.Add(start+tc.wantAt)) {
					t.Fatalf("vote %d = %+v, want %v at +%v", i, v, tc.want[i], start+tc.wantAt)
				}
			}
		})
	}
}

// TestTrackStatusHeldForDelay: the first vote after Track also waits until
// the status has held for the whole delay (contract §7.2), not just until
// Track+delay.
func TestTrackStatusHeldForDelay(t *testing.T) {
	h := newHarness(testDelay, testRemove)
	h.v.Track("a")
	h.at(testDelay - 10)
	h.add("a", +1)
	h.step(testDelay)
	if got := h.takeVotes(); len(got) != 0 {
		t.Fatalf("vote only 10ns after the change: %v", got)
	}
	h.step(2*testDelay - 11)
	if got := h.takeVotes(); len(got) != 0 {
		t.Fatalf("vote before the delay: %v", got)
	}
	h.step(2*testDelay - 10)
	if got := h.takeVotes(); len(got) != 1 || !got[0].active {
		t.Fatalf("votes = %v, want one active", got)
	}
}

// TestConsistentOutcome checks, over random sequences of count changes and
// steps on a monotonic fake clock, what the voter guarantees for one id:
//   - every vote carries the status (count>0) at the moment it is sent, and
//     that status has held for at least delay before it (since the last
//     flip, or since Track);
//   - two votes are at least delay apart;
//   - votes alternate: each vote after the first differs from the previous;
//   - Idle fires only while inactive with an inactive last vote, after
//     removeDelay without a flip, and at most once per inactive stretch;
//   - once the changes stop and the clock passes delay+removeDelay, the
//     last vote equals the final status (if there was any status to state),
//     Active agrees, and an inactive identity has been reported idle.
func TestConsistentOutcome(t *testing.T) {
	const sequences = 2000
	rng := rand.New(rand.NewSource(7))
	for seq := range sequences {
		seed := rng.Int63()
		if err := checkSequence(seed); err != nil {
			t.Fatalf("sequence %d (seed %d): %v", seq, seed, err)
		}
	}
}

package vote

import (
	"context"
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

func checkSequence(seed int64) error {
	r := rand.New(rand.NewSource(seed))
	delay := time.Duration(1+r.Intn(10)) * 10 * time.Millisecond
	removeDelay := time.Duration(1+r.Intn(10)) * 10 * time.Millisecond
	tracked := r.Intn(4) != 0

	now := t0
	var (
		count      int       // model count
		lastChange time.Time // last flip (or Track)
		exists     bool      // the voter has a state for the id
		votes      []voteRec
		idled      bool // idle already fired since lastChange
		err        error
	)
	fail := func(format string, a ...any) {
		if err == nil {
			err = fmt.Errorf(format, a...)
		}
	}
	v := newVoter(delay, removeDelay,
		func(id string, active bool) {
			if id != "a" {
				fail("vote for unknown id %q", id)
			}
			if active != (count > 0) {
				fail("vote %v at %v while count=%d", active, now.Sub(t0), count)
			}
			if now.Sub(lastChange) < delay {
				fail("vote %v at %v only %v after the last change", active, now.Sub(t0), now.Sub(lastChange))
			}
			if n := len(votes); n > 0 {
				prev := votes[n-1]
				if prev.active == active {
					fail("vote %v twice in a row (at %v and %v)", active, prev.at.Sub(t0), now.Sub(t0))
				}
				if now.Sub(prev.at) < delay {
					fail("votes %v apart (< delay %v)", now.Sub(prev.at), delay)
				}
			}
			votes = append(votes, voteRec{id, active, now})
		},
		func(id string) {
			if id != "a" {
				fail("idle for unknown id %q", id)
			}
			if count != 0 {
				fail("idle at %v while count=%d", now.Sub(t0), count)
			}
			if n := len(votes); n == 0 || votes[n-1].active {
				fail("idle at %v without an inactive last vote", now.Sub(t0))
			}
			if now.Sub(lastChange) < removeDelay {
				fail("idle at %v only %v after the last change", now.Sub(t0), now.Sub(lastChange))
			}
			if idled {
				fail("idle twice without a change, at %v", now.Sub(t0))
			}
			idled = true
		},
		func() time.Time { return now })

	if tracked {
		v.Track("a")
		exists, lastChange = true, now
	}
	steps := 10 + r.Intn(50)
	for range steps {
		if r.Intn(3) != 0 {
			now = now.Add(time.Duration(r.Intn(16)) * 10 * time.Millisecond)
		}
		if r.Intn(3) == 0 {
			v.step(now)
			continue
		}
		delta := 1
		if r.Intn(2) == 0 {
			delta = -1
		}
		was := count > 0
		count = max(count+delta, 0)
		v.Add("a", delta)
		if was != (count > 0) {
			lastChange, idled, exists = now, false, true
		}
		if got := v.Count("a"); got != count {
			fail("Count = %d, want %d", got, count)
		}
	}
	end := now
	now = end.Add(delay)
	v.step(now)
	now = now.Add(removeDelay)
	v.step(now)
	now = now.Add(delay + removeDelay)
	if next := v.step(now); !next.IsZero() {
		fail("still due at %v after settling", next.Sub(t0))
	}
	if err != nil {
		return err
	}
	final := count > 0
	active, known := v.Active("a")
	if !exists {
		if len(votes) != 0 || known {
			return fmt.Errorf("votes %v / known %v for an id that never had a status", votes, known)
		}
		return nil
	}
	if len(votes) == 0 {
		return fmt.Errorf("no vote at all; final status %v", final)
	}
	if last := votes[len(votes)-1]; last.active != final {
		return fmt.Errorf("last vote %v, final status %v", last.active, final)
	}
	if !known || active != final {
		return fmt.Errorf("Active = %v,%v, want %v,true", active, known, final)
	}
	if !final && !idled {
		return fmt.Errorf("inactive at the end but no idle since the last change")
	}
	if final && idled {
		return fmt.Errorf("active at the end but idle since the last change")
	}
	return nil
}

func TestForget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *harness) time.Duration // returns when to Forget
	}{
		{name: "vote queued", setup: func(h *harness) time.Duration {
			h.v.Track("a")
			h.add("a", +1)
			return testDelay / 2
		}},
		{name: "active voted", setup: func(h *harness) time.Duration {
			h.v.Track("a")
			h.add("a", +1)
			h.step(testDelay)
			return testDelay
		}},
		{name: "idle queued", setup: func(h *harness) time.Duration {
			h.v.Track("a")
			h.step(testDelay) // inactive vote; idle queued
			return testDelay + testRemove/2
		}},
		{name: "flip queued", setup: func(h *harness) time.Duration {
			h.v.Track("a")
			h.add("a", +1)
			h.step(testDelay)
			h.at(2 * testDelay)
			h.add("a", -1)
			return 2*testDelay + 1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(testDelay, testRemove)
			h.v.Track("b") // an unrelated id is unaffected
			h.add("b", +1)
			at := tc.setup(h)
			h.takeVotes()
			h.takeIdles()
			h.at(at)
			h.v.Forget("a")
			h.add("a", -1) // a late finish of a task counted before the move
			if a, k := h.v.Active("a"); a || k {
				t.Fatalf("Active after Forget = %v,%v, want unknown", a, k)
			}
			if c := h.v.Count("a"); c != 0 {
				t.Fatalf("Count after Forget = %d", c)
			}
			if _, ok := h.v.ids["a"]; ok {
				t.Fatalf("state for a kept after Forget")
			}
			for i := 1; i <= 10; i++ {
				h.step(at + time.Duration(i)*(testDelay+testRemove))
			}
			for _, v := range h.takeVotes() {
				if v.id == "a" {
					t.Fatalf("vote for a forgotten id: %+v", v)
				}
			}
			for _, i := range h.takeIdles() {
				if i.id == "a" {
					t.Fatalf("idle for a forgotten id: %+v", i)
				}
			}
			if a, k := h.v.Active("b"); !a || !k {
				t.Fatalf("Active(b) = %v,%v, want true,true", a, k)
			}
		})
	}
}

func TestRunRealClock(t *testing.T) {
	votes := make(chan voteRec, 16)
	idles := make(chan string, 16)
	v := New(time.Millisecond, time.Millisecond,
		func(id string, active bool) { votes <- voteRec{id: id, active: active} },
		func(id string) { idles <- id })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); v.Run(ctx) }()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()

	v.Track("a")
	v.Add("a", +1)
	select {
	case got := <-votes:
		if got.id != "a" || !got.active {
			t.Fatalf("vote = %+v, want a active", got)
		}
	case <-deadline.C:
		t.Fatal("no vote from Run")
	}
	v.Add("a", -1)
	select {
	case got := <-votes:
		if got.id != "a" || got.active {
			t.Fatalf("vote = %+v, want a inactive", got)
		}
	case <-deadline.C:
		t.Fatal("no inactive vote from Run")
	}
	select {
	case id := <-idles:
		if id != "a" {
			t.Fatalf("idle for %q, want a", id)
		}
	case <-deadline.C:
		t.Fatal("no idle from Run")
	}
	cancel()
	select {
	case <-done:
	case <-deadline.C:
		t.Fatal("Run did not return after cancel")
	}
}

func TestCountAndActive(t *testing.T) {
	for _, tc := range []struct {
		name      string
		track     bool
		deltas    []int
		wantCount int
		wantVote  []bool // votes after the delay
	}{
		{name: "unknown id", wantCount: 0},
		{name: "tracked, no tasks", track: true, wantCount: 0, wantVote: []bool{false}},
		{name: "two tasks", track: true, deltas: []int{1, 1}, wantCount: 2, wantVote: []bool{true}},
		{name: "clamp at zero", track: true, deltas: []int{-1, -1, 1}, wantCount: 1, wantVote: []bool{true}},
		{name: "clamp below zero", track: true, deltas: []int{1, -3}, wantCount: 0, wantVote: []bool{false}},
		{name: "untracked task", deltas: []int{1}, wantCount: 1, wantVote: []bool{true}},
		{name: "untracked finish only", deltas: []int{-1}, wantCount: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(testDelay, testRemove)
			if tc.track {
				h.v.Track("a")
				h.v.Track("a") // a second Track changes nothing
			}
			h.add("a", tc.deltas...)
			if c := h.v.Count("a"); c != tc.wantCount {
				t.Fatalf("Count = %d, want %d", c, tc.wantCount)
			}
			if a, k := h.v.Active("a"); a || k {
				t.Fatalf("Active before a vote = %v,%v, want unknown", a, k)
			}
			h.step(testDelay)
			votes := h.takeVotes()
			if len(votes) != len(tc.wantVote) {
				t.Fatalf("votes = %v, want %v", votes, tc.wantVote)
			}
			for i, v := range votes {
				if v.active != tc.wantVote[i] {
					t.Fatalf("votes = %v, want %v", votes, tc.wantVote)
				}
			}
			a, k := h.v.Active("a")
			if k != (len(tc.wantVote) > 0) || (k && a != tc.wantVote[0]) {
				t.Fatalf("Active = %v,%v after votes %v", a, k, tc.wantVote)
			}
			if c := h.v.Count("a"); c != tc.wantCount {
				t.Fatalf("Count after the vote = %d, want %d", c, tc.wantCount)
			}
		})
	}
}

func BenchmarkAdd(b *testing.B) {
	v := newVoter(time.Second, time.Second, func(string, bool) {}, func(string) {}, time.Now)
	ids := make([]string, 64)
	for i := range ids {
		ids[i] = fmt.Sprintf("id-%d", i)
		v.Track(ids[i])
	}
	i := 0
	for b.Loop() {
		id := ids[i%len(ids)]
		v.Add(id, +1)
		v.Add(id, -1)
		i++
	}
}

// Recheck queues one more idle call for an identity whose last vote was
// inactive and whose idle call has passed (its owner could not unmap it
// then); it does nothing for an active or unknown identity.
func TestRecheck(t *testing.T) {
	h := newHarness(time.Second, 2*time.Second)
	h.v.Track("a")
	h.step(time.Second) // the first vote: inactive
	if v := h.takeVotes(); len(v) != 1 || v[0].active {
		t.Fatalf("votes %v, want one inactive", v)
	}
	h.step(3 * time.Second) // the idle call
	if i := h.takeIdles(); len(i) != 1 {
		t.Fatalf("idle calls %v, want one", i)
	}
	h.v.Recheck("a")
	h.step(4 * time.Second)
	if i := h.takeIdles(); len(i) != 0 {
		t.Fatalf("idle call before the remove delay: %v", i)
	}
	h.step(5 * time.Second)
	if i := h.takeIdles(); len(i) != 1 || !i[0].at.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("idle calls %v, want one at +5s", i)
	}
	h.v.Recheck("nobody") // unknown: nothing
	h.add("a", 1)
	h.v.Recheck("a") // active: nothing
	h.step(time.Minute)
	if i := h.takeIdles(); len(i) != 0 {
		t.Fatalf("idle calls %v for an active or unknown identity", i)
	}
}

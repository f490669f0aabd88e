package follow_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/internal/follow"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// pauseNode is the node side of a Pauses: it counts the callbacks, and in
// each asks the Pauses a query, which a Pauses that called back while
// holding its lock would deadlock on.
type pauseNode struct {
	mu             sync.Mutex
	began, lifted  int
	seenInCallback [][]string // what By("alice", "mail") said in each callback
	p              *follow.Pauses
}

func (n *pauseNode) on() follow.OnPause {
	return follow.OnPause{Began: func() { n.called(&n.began) }, Lifted: func() { n.called(&n.lifted) }}
}

func (n *pauseNode) called(count *int) {
	by := n.p.By("alice", "mail")
	n.mu.Lock()
	defer n.mu.Unlock()
	*count++
	n.seenInCallback = append(n.seenInCallback, by)
}

// counts is how many times the node was told a pause began, and that one
// was lifted.
func (n *pauseNode) counts() (began, lifted int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.began, n.lifted
}

func (n *pauseNode) lastSeen() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.seenInCallback[len(n.seenInCallback)-1]
}

func newPauses(c *cluster) (*follow.Pauses, *pauseNode) {
	n := &pauseNode{}
	n.p = follow.NewPauses(c.watch(), n.on())
	return n.p, n
}

func pause(id, kind string, since time.Time) *taskdv1.Pause {
	return &taskdv1.Pause{Identity: id, Kind: kind, Since: timestamppb.New(since)}
}

var (
	t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

// Load makes the pauses in etcd the copy: By names those that hold a task
// back (identity before kind), Since says since when, and the node is told
// to look at its parked entries again (Lifted), not that a pause began.
func TestPausesLoadKnowsThePausesInForce(t *testing.T) {
	c := newCluster(t)
	c.put(t, keys.PauseIdentity("alice"), pause("alice", "", t0))
	c.put(t, keys.PauseKind("mail"), pause("", "mail", t1))
	c.put(t, keys.Pauses()+"bogus", pause("x", "", t0)) // not a pause key: logged, left out
	p, n := newPauses(c)
	if by := p.By("alice", "mail"); by != nil {
		t.Fatalf("before Load, By = %q; want nil", by)
	}
	within(t, "Load", func() {
		if err := p.Load(ctxFor(t)); err != nil {
			t.Errorf("Load: %v", err)
		}
	})
	for _, tc := range []struct {
		id, kind string
		want     []string
	}{
		{"alice", "mail", []string{follow.ByIdentity, follow.ByKind}},
		{"alice", "other", []string{follow.ByIdentity}},
		{"bob", "mail", []string{follow.ByKind}},
		{"bob", "other", nil},
		{"x", "other", nil},
	} {
		if got := p.By(tc.id, tc.kind); !slices.Equal(got, tc.want) {
			t.Errorf("By(%q, %q) = %q; want %q", tc.id, tc.kind, got, tc.want)
		}
	}
	if since, ok := p.Since("alice", ""); !ok || !since.Equal(t0) {
		t.Errorf("Since(alice) = %v, %v; want %v", since, ok, t0)
	}
	if since, ok := p.Since("", "mail"); !ok || !since.Equal(t1) {
		t.Errorf("Since(kind mail) = %v, %v; want %v", since, ok, t1)
	}
	if began, lifted := n.counts(); began != 0 || lifted != 1 {
		t.Errorf("Load told the node began %d, lifted %d times; want 0 and 1", began, lifted)
	}
	if got := n.lastSeen(); !slices.Equal(got, []string{follow.ByIdentity, follow.ByKind}) {
		t.Errorf("in the callback By said %q; want the loaded pauses already in force", got)
	}
}

// The watch brings a pause that begins (the node is told once), a newer
// since of the same pause (not told again) and its end (told it was
// lifted); in each callback the change is already visible.
func TestPausesWatchBringsEachChange(t *testing.T) {
	c := newCluster(t)
	p, n := newPauses(c)
	loadThenRun(t, p)
	c.put(t, keys.PauseKind("mail"), pause("", "mail", t0))
	tst.Eventually(t, wait, func() bool { b, _ := n.counts(); return b == 1 }, "the node told the kind pause began")
	if got := n.lastSeen(); !slices.Equal(got, []string{follow.ByKind}) {
		t.Fatalf("in the callback By said %q; want the kind pause", got)
	}
	c.put(t, keys.PauseKind("mail"), pause("", "mail", t1))
	tst.Eventually(t, wait, func() bool { s, _ := p.Since("", "mail"); return s.Equal(t1) }, "the newer since")
	c.del(t, keys.PauseKind("mail"))
	tst.Eventually(t, wait, func() bool { _, l := n.counts(); return l == 2 }, "the node told the pause was lifted")
	if got := n.lastSeen(); got != nil {
		t.Fatalf("in the callback By said %q; want nothing in force", got)
	}
	if began, _ := n.counts(); began != 1 {
		t.Fatalf("the node was told %d times that a pause began; want once", began)
	}
}

// What the node learns from its own writes counts at once, and only a
// change is told: a pause learned twice began once, a lift learned twice
// was lifted once, a lift of a pause not known is no news.
func TestPausesLearnTellsOnlyChanges(t *testing.T) {
	c := newCluster(t)
	p, n := newPauses(c)
	within(t, "Learn", func() {
		p.Learn("alice", "", t0)
		p.Learn("alice", "", t1)
		p.Learn("", "mail", t0)
	})
	if began, lifted := n.counts(); began != 2 || lifted != 0 {
		t.Fatalf("told began %d, lifted %d; want 2 and 0", began, lifted)
	}
	if since, _ := p.Since("alice", ""); !since.Equal(t1) {
		t.Fatalf("Since(alice) = %v; want the later %v", since, t1)
	}
	within(t, "Learn", func() {
		p.Learn("alice", "", time.Time{})
		p.Learn("alice", "", time.Time{})
		p.Learn("bob", "", time.Time{})
	})
	if began, lifted := n.counts(); began != 2 || lifted != 1 {
		t.Fatalf("told began %d, lifted %d; want 2 and 1", began, lifted)
	}
	if got := p.By("alice", "mail"); !slices.Equal(got, []string{follow.ByKind}) {
		t.Fatalf("By = %q; want only the kind pause", got)
	}
}

// A failed start's Else reads the pause keys; a pause found there is
// learned (identity from the first read, kind from the second) and
// reported; empty or missing reads are not.
func TestPausesLearnRefusal(t *testing.T) {
	c := newCluster(t)
	c.put(t, keys.PauseIdentity("alice"), pause("alice", "", t0))
	c.put(t, keys.PauseKind("mail"), pause("", "mail", t1))
	p, n := newPauses(c)
	empty := c.get(t, keys.PauseIdentity("bob"))
	if p.LearnRefusal("bob", "other", empty, nil) {
		t.Fatal("an empty read reported a pause")
	}
	if !p.LearnRefusal("alice", "mail", c.get(t, keys.PauseIdentity("alice")), c.get(t, keys.PauseKind("mail"))) {
		t.Fatal("the pauses read were not reported")
	}
	if got := p.By("alice", "mail"); !slices.Equal(got, []string{follow.ByIdentity, follow.ByKind}) {
		t.Fatalf("By = %q; want both learned", got)
	}
	if since, _ := p.Since("", "mail"); !since.Equal(t1) {
		t.Fatalf("Since(kind mail) = %v; want %v", since, t1)
	}
	if began, _ := n.counts(); began != 2 {
		t.Fatalf("told began %d times; want 2", began)
	}
}

// The pause whose event breaks the watch (the fault swallows the event) is
// found by the list that follows, which tells the node to look at its
// parked entries again; the watch resumed after it brings the lift.
func TestPausesBrokenWatchListsAgain(t *testing.T) {
	c := newCluster(t)
	brk := c.faults.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: keys.PauseIdentity("alice"), Times: 1,
		Action: etcdfault.BreakWatch()})
	p, n := newPauses(c)
	loadThenRun(t, p)
	c.put(t, keys.PauseIdentity("alice"), pause("alice", "", t0))
	tst.Eventually(t, wait, func() bool { _, l := n.counts(); return l == 2 }, "the list after the break (the Load was the first)")
	if p.By("alice", "") == nil {
		t.Fatal("the list after the break did not find the pause")
	}
	if brk.Hits() != 1 {
		t.Fatalf("the watch was broken %d times; want once", brk.Hits())
	}
	if began, _ := n.counts(); began != 0 {
		t.Fatalf("told began %d times; want none (the watch never delivered the pause)", began)
	}
	c.del(t, keys.PauseIdentity("alice"))
	tst.Eventually(t, wait, func() bool { return p.By("alice", "") == nil }, "the lift, from the new watch")
	if _, lifted := n.counts(); lifted != 3 {
		t.Fatalf("told lifted %d times; want 3", lifted)
	}
}

// Run without a Load lists first; a list that fails is retried.
func TestPausesRunListsFirstAndRetries(t *testing.T) {
	c := newCluster(t)
	c.put(t, keys.PauseKind("mail"), pause("", "mail", t0))
	fail := c.faults.Add(etcdfault.Rule{Op: etcdfault.OpGet, Prefix: keys.Pauses(), Times: 2, Action: etcdfault.Fail(nil)})
	p, _ := newPauses(c)
	run(t, p.Run)
	tst.Eventually(t, wait, func() bool { return p.By("", "mail") != nil }, "the pause, listed by Run")
	if fail.Hits() != 2 {
		t.Fatalf("%d lists failed; want 2 before the one that succeeded", fail.Hits())
	}
}

// Read reads etcd, not the copy: the identity pauses, then the kind
// pauses, each by name.
func TestPausesRead(t *testing.T) {
	c := newCluster(t)
	for _, pp := range []*taskdv1.Pause{pause("", "a-kind", t0), pause("zed", "", t0), pause("", "b-kind", t0), pause("amy", "", t0)} {
		key := keys.PauseIdentity(pp.Identity)
		if pp.Kind != "" {
			key = keys.PauseKind(pp.Kind)
		}
		c.put(t, key, pp)
	}
	p, _ := newPauses(c)
	got, err := p.Read(ctxFor(t))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	var names []string
	for _, pp := range got {
		names = append(names, pp.Identity+"/"+pp.Kind)
	}
	if want := []string{"amy/", "zed/", "/a-kind", "/b-kind"}; !slices.Equal(names, want) {
		t.Fatalf("Read = %q; want %q", names, want)
	}
	if p.By("amy", "a-kind") != nil {
		t.Fatal("Read changed the copy")
	}
}

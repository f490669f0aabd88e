package admission

import (
	"slices"
	"testing"
	"time"
)

type ident string

// run is a test entry: its identity and a name.
type run struct {
	id   ident
	name string
}

// granted collects what Grant hands out, in order.
type granted []string

func (g *granted) give(id ident, e *run) {
	if e.id != id {
		panic("entry given to another identity: " + string(id) + " " + e.name)
	}
	*g = append(*g, e.name)
}

func TestLimitRoundRobinAcrossIdentities(t *testing.T) {
	lims := NewLimits[*run, ident](map[string]int{"k": 1})
	lim := lims.Of("k")
	if lim == nil || lims.Of("other") != nil {
		t.Fatalf("Of: %v, %v", lim, lims.Of("other"))
	}
	first := &run{"a", "a0"}
	if !lim.Take("a", first) {
		t.Fatal("the first run did not get the free token")
	}
	// a has a backlog of three; b and c one each, arriving after.
	for _, r := range []*run{{"a", "a1"}, {"a", "a2"}, {"a", "a3"}, {"b", "b1"}, {"c", "c1"}} {
		if lim.Take(r.id, r) {
			t.Fatalf("%s took a token the limit does not have", r.name)
		}
	}
	if got := lims.Waiting()["k"]; got != 5 {
		t.Fatalf("waiting = %d, want 5", got)
	}
	var g granted
	for range 5 {
		lim.Release()
		lim.Grant(g.give)
		if lim.Running() != 1 {
			t.Fatalf("running = %d after a grant, want 1", lim.Running())
		}
	}
	// Each identity in turn: a's backlog delays b and c by one run each at
	// most, and a's runs keep their order.
	want := []string{"a1", "b1", "c1", "a2", "a3"}
	if !slices.Equal(g, want) {
		t.Fatalf("granted %v, want %v", g, want)
	}
	if lim.Waiting() != 0 {
		t.Fatalf("waiting = %d after all grants", lim.Waiting())
	}
}

func TestLimitKeepsIdentityOrder(t *testing.T) {
	lim := NewLimits[*run, ident](map[string]int{"k": 2}).Of("k")
	a1, a2, a3 := &run{"a", "a1"}, &run{"a", "a2"}, &run{"a", "a3"}
	if !lim.Take("a", a1) {
		t.Fatal("a1 did not get a free token")
	}
	lim.Take("b", &run{"b", "b1"}) // the second token
	if lim.Take("a", a2) {
		t.Fatal("a2 took a token while none is free")
	}
	// A token frees, but a3 must not pass a2, which waits.
	lim.Release()
	if lim.Take("a", a3) {
		t.Fatal("a3 passed a2, which waits for a token")
	}
	var g granted
	lim.Grant(g.give)
	if !slices.Equal(g, []string{"a2"}) {
		t.Fatalf("granted %v, want [a2]", g)
	}
	lim.Release()
	lim.Grant(g.give)
	if !slices.Equal(g, []string{"a2", "a3"}) {
		t.Fatalf("granted %v, want [a2 a3]", g)
	}
}

func TestLimitTokenBackWhenStartRunsNothing(t *testing.T) {
	lim := NewLimits[*run, ident](map[string]int{"k": 1}).Of("k")
	if !lim.Take("a", &run{"a", "a1"}) {
		t.Fatal("a1 did not get the free token")
	}
	lim.Take("b", &run{"b", "b1"})
	var g granted
	lim.Grant(g.give) // no token free: nothing handed out
	if len(g) != 0 {
		t.Fatalf("granted %v with no token free", g)
	}
	// a1's start ran nothing: its token goes back and on to b1.
	lim.Release()
	lim.Grant(g.give)
	if !slices.Equal(g, []string{"b1"}) || lim.Running() != 1 {
		t.Fatalf("granted %v, running %d; want [b1], 1", g, lim.Running())
	}
	// b1's start ran nothing too, nobody waits: the token is free again.
	lim.Release()
	lim.Grant(g.give)
	if lim.Running() != 0 || !lim.Take("c", &run{"c", "c1"}) {
		t.Fatalf("the token given back is not free: running %d", lim.Running())
	}
}

func TestLimitForgetIdentity(t *testing.T) {
	lims := NewLimits[*run, ident](map[string]int{"k": 1})
	lim := lims.Of("k")
	lim.Take("a", &run{"a", "a0"})
	for _, r := range []*run{{"a", "a1"}, {"b", "b1"}, {"b", "b2"}, {"c", "c1"}} {
		lim.Take(r.id, r)
	}
	lims.Forget("b")
	if lim.Waiting() != 2 {
		t.Fatalf("waiting = %d after forgetting b, want 2", lim.Waiting())
	}
	var g granted
	for range 2 {
		lim.Release()
		lim.Grant(g.give)
	}
	if !slices.Equal(g, []string{"a1", "c1"}) {
		t.Fatalf("granted %v, want [a1 c1]", g)
	}
}

func TestNoLimits(t *testing.T) {
	lims := NewLimits[*run, ident](nil)
	if lims.Any() || lims.Of("k") != nil || lims.Waiting() != nil {
		t.Fatal("limits without kinds limit something")
	}
}

func timeOf(ns int64) time.Time { return time.Unix(0, ns) }

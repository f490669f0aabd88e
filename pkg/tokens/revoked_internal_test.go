package tokens

import (
	"fmt"
	"testing"
	"time"
)

// TestGoneSetIsBounded: a node remembers at most MaxRemembered gone tokens,
// forgetting the oldest first, and forgets one whose id and secret come
// back.
func TestGoneSetIsBounded(t *testing.T) {
	var s goneSet
	before := map[string]*Token{}
	for i := range MaxRemembered + 1 {
		id := fmt.Sprintf("t%d", i)
		before[id] = &Token{ID: id, Hash: HashSecret(id)}
		// One at a time, so that t0 is the oldest.
		s.update(map[string]*Token{id: before[id]}, nil, goneRevoked, time.Unix(int64(i), 0))
	}
	if len(s.byKey) != MaxRemembered || len(s.order) != MaxRemembered {
		t.Fatalf("%d remembered (%d in order), want %d", len(s.byKey), len(s.order), MaxRemembered)
	}
	if _, ok := s.find("t0", HashSecret("t0")); ok {
		t.Fatal("the oldest is still remembered")
	}
	if g, ok := s.find("t1", HashSecret("t1")); !ok || g.why != goneRevoked {
		t.Fatalf("t1: %+v %v", g, ok)
	}
	if _, ok := s.find("t1", HashSecret("other")); ok {
		t.Fatal("found with another secret")
	}
	s.update(nil, map[string]*Token{"t1": before["t1"]}, goneRevoked, time.Now())
	if _, ok := s.find("t1", HashSecret("t1")); ok || len(s.order) != MaxRemembered-1 {
		t.Fatalf("t1 back in force is still remembered as gone (%d in order)", len(s.order))
	}
}

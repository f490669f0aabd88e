package held

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTaskSetAgreesWithAMap runs random puts, replacements and deletes on a
// TaskSet and a Go map side by side and compares them after every step.
func TestTaskSetAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s TaskSet
	want := map[string]*Entry{}
	for step := range 20000 {
		id := fmt.Sprintf("t%04d", rng.IntN(300))
		switch rng.IntN(3) {
		case 0, 1:
			e := &Entry{ID: id}
			s.Put(e)
			want[id] = e
		case 2:
			s.Del(id)
			delete(want, id)
		}
		if s.Len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, s.Len(), len(want))
		}
		if got := s.Get(id); got != want[id] {
			t.Fatalf("step %d: get(%s) = %p, want %p", step, id, got, want[id])
		}
	}
	seen := map[string]bool{}
	for e := range s.All() {
		if seen[e.ID] {
			t.Fatalf("%s produced twice", e.ID)
		}
		seen[e.ID] = true
		if want[e.ID] != e {
			t.Fatalf("%s: produced %p, the map holds %p", e.ID, e, want[e.ID])
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("all() produced %d entries, want %d", len(seen), len(want))
	}
	for id := range want {
		s.Del(id)
	}
	if s.Len() != 0 || s.slots != nil {
		t.Fatalf("emptied set keeps len %d and %d slots", s.Len(), len(s.slots))
	}
}

// TestTaskSetRangeWhileChanging checks what a Go map promises a caller
// that changes it while ranging: an entry deleted before it is reached is
// not produced, and no entry is produced twice, also when a put rehashes
// the table mid-range.
func TestTaskSetRangeWhileChanging(t *testing.T) {
	for _, grow := range []bool{false, true} {
		t.Run(fmt.Sprintf("rehash=%v", grow), func(t *testing.T) {
			var s TaskSet
			all := map[string]*Entry{}
			for i := range 100 {
				e := &Entry{ID: fmt.Sprintf("t%03d", i)}
				s.Put(e)
				all[e.ID] = e
			}
			deleted := map[string]bool{}
			produced := map[string]bool{}
			slotsBefore := len(s.slots)
			for e := range s.All() {
				if deleted[e.ID] {
					t.Fatalf("%s produced after its delete", e.ID)
				}
				if produced[e.ID] {
					t.Fatalf("%s produced twice", e.ID)
				}
				produced[e.ID] = true
				// Delete this one and the next two ids, reached or not.
				for k := range 3 {
					var n int
					fmt.Sscanf(e.ID, "t%03d", &n)
					id := fmt.Sprintf("t%03d", n+k)
					s.Del(id)
					deleted[id] = true
				}
				if grow && len(produced) == 10 {
					for i := range 200 {
						s.Put(&Entry{ID: fmt.Sprintf("new%03d", i)})
					}
				}
			}
			if grow && len(s.slots) == slotsBefore {
				t.Fatalf("the puts did not rehash (%d slots): the test does not test what it says", len(s.slots))
			}
			for id := range all {
				if !produced[id] && !deleted[id] {
					t.Fatalf("%s neither produced nor deleted", id)
				}
			}
		})
	}
}

package held

import (
	"context"
	"errors"
	"testing"
)

// TestFlightsOneRunPerTask: a second run of a task in flight is refused,
// whoever asks; a run that ended no longer blocks it; ending a run that
// is no longer the registered one (a late settle) leaves the registered
// one in place.
func TestFlightsOneRunPerTask(t *testing.T) {
	r := NewFlights()
	ref := Ref{Scope: ScopeOwned, Identity: "a", Task: "t1"}
	first, ok := r.Begin(ref, context.Background(), nil)
	if !ok || first == nil {
		t.Fatal("the first run of t1 was refused")
	}
	if FlightOf(first.Ctx) != first {
		t.Error("the run's context does not carry the run")
	}
	if _, ok := r.Begin(ref, context.Background(), nil); ok {
		t.Fatal("a second run of t1 began while the first is in flight")
	}
	other := Ref{Scope: ScopeOwned, Identity: "a", Task: "t2"}
	if _, ok := r.Begin(other, context.Background(), nil); !ok {
		t.Fatal("a run of another task of the identity was refused")
	}
	if !r.End(first) {
		t.Fatal("End of the registered run reported it was not registered")
	}
	second, ok := r.Begin(ref, context.Background(), nil)
	if !ok {
		t.Fatal("a run of t1 was refused after the first ended")
	}
	if r.End(first) {
		t.Error("a late End of the first run reported it ended the second")
	}
	if r.Of(ref) != second || r.Len() != 2 {
		t.Errorf("after a late End: Of(t1) = %p (want the second, %p), Len = %d (want 2)", r.Of(ref), second, r.Len())
	}
}

// TestFlightsOwnedRangesOnlyOwnedRuns: the runs of EVERY_NODE and
// non-durable tasks are not an owned identity's, and the filter by
// identity holds; the caller may end runs while ranging.
func TestFlightsOwnedRangesOnlyOwnedRuns(t *testing.T) {
	r := NewFlights()
	begin := func(s Scope, id, task string) {
		if _, ok := r.Begin(Ref{Scope: s, Identity: id, Task: task}, context.Background(), nil); !ok {
			t.Fatalf("begin %s/%s", id, task)
		}
	}
	begin(ScopeOwned, "a", "1")
	begin(ScopeOwned, "a", "2")
	begin(ScopeOwned, "b", "1")
	begin(ScopeEvery, "a", "3")
	begin(ScopeLocal, "a", "4")
	count := func(id string) int {
		n := 0
		for range r.Owned(id) {
			n++
		}
		return n
	}
	if got := count("a"); got != 2 {
		t.Errorf("owned runs of a = %d, want 2", got)
	}
	if got := count(""); got != 3 {
		t.Errorf("owned runs = %d, want 3", got)
	}
	cause := errors.New("fenced")
	for f := range r.Owned("") {
		f.Cancel(cause)
		r.End(f)
	}
	if r.Len() != 2 {
		t.Errorf("after ending the owned runs while ranging, %d runs are left, want the 2 others", r.Len())
	}
}

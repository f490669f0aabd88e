package admission

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// slot is a fake reserved worker slot.
type slot struct {
	r    *fakeRemote
	kind string
}

func (s *slot) Release() { s.r.free[s.kind]++; s.r.released++ }

// fakeRemote has free slots by kind; kinds it serves are those with an
// entry in free (even 0).
type fakeRemote struct {
	free     map[string]int
	released int
}

func (r *fakeRemote) Reserve(kind string) (*slot, bool) {
	if r.free[kind] == 0 {
		return nil, false
	}
	r.free[kind]--
	return &slot{r, kind}, true
}

func (r *fakeRemote) Kinds() []string {
	var out []string
	for k := range r.free {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// wrun is a test entry waiting for a worker, with its hold.
type wrun struct {
	name string
	h    WorkerHold[*wrun, *slot]
}

func newLog() (hclog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info}), &buf
}

func TestWorkerQueueOrder(t *testing.T) {
	r := &fakeRemote{free: map[string]int{"k": 0}}
	w := NewWorkers[*wrun, *slot](r, "n1", nil)
	log, _ := newLog()
	// Joined in this order; granted by readyAt, then priority (higher
	// first), then task id.
	runs := []struct {
		name string
		due  Due
	}{
		{"late", Due{At: 30, Prio: 9, ID: "a"}},
		{"early-low-b", Due{At: 10, Prio: 1, ID: "b"}},
		{"early-high", Due{At: 10, Prio: 5, ID: "z"}},
		{"early-low-a", Due{At: 10, Prio: 1, ID: "a"}},
		{"middle", Due{At: 20, Prio: 0, ID: "m"}},
	}
	for _, x := range runs {
		e := &wrun{name: x.name}
		if w.Admit(&e.h, e, "k", x.due, log) {
			t.Fatalf("%s admitted with no free worker", x.name)
		}
		if !e.h.Waiting() || e.h.Kind() != "k" || e.h.Since().IsZero() {
			t.Fatalf("%s does not wait for a worker of k", x.name)
		}
	}
	if got := w.Waiting(func(string) bool { return false })["k"]; got != len(runs) {
		t.Fatalf("waiting = %d, want %d", got, len(runs))
	}
	var got []string
	for range runs {
		r.free["k"] = 1
		w.Grant(log, func(e *wrun) {
			if !e.h.Reserved() || e.h.Waiting() {
				t.Fatalf("%s given without a slot, or still waiting", e.name)
			}
			got = append(got, e.name)
		})
	}
	want := []string{"early-high", "early-low-a", "early-low-b", "middle", "late"}
	if !slices.Equal(got, want) {
		t.Fatalf("granted %v, want %v", got, want)
	}
}

func TestWorkerGrantAcrossKinds(t *testing.T) {
	r := &fakeRemote{free: map[string]int{"x": 0, "y": 0}}
	w := NewWorkers[*wrun, *slot](r, "n1", nil)
	log, _ := newLog()
	for _, x := range []struct {
		name, kind string
		at         int64
	}{{"x2", "x", 2}, {"y1", "y", 1}, {"x3", "x", 3}, {"y4", "y", 4}} {
		e := &wrun{name: x.name}
		w.Admit(&e.h, e, x.kind, Due{At: x.at, ID: x.name}, log)
	}
	// Two slots of x free, one of y: the earliest heads first, x kept on
	// after y is full.
	r.free["x"], r.free["y"] = 2, 1
	var got []string
	w.Grant(log, func(e *wrun) { got = append(got, e.name) })
	if want := []string{"y1", "x2", "x3"}; !slices.Equal(got, want) {
		t.Fatalf("granted %v, want %v", got, want)
	}
}

func TestWorkerReserveWhenFree(t *testing.T) {
	r := &fakeRemote{free: map[string]int{"k": 1}}
	w := NewWorkers[*wrun, *slot](r, "n1", nil)
	log, _ := newLog()
	a, b := &wrun{name: "a"}, &wrun{name: "b"}
	if !w.Admit(&a.h, a, "k", Due{At: 1}, log) || !a.h.Reserved() {
		t.Fatal("a did not get the free worker slot")
	}
	if !w.Admit(&a.h, a, "k", Due{At: 1}, log) {
		t.Fatal("a, holding a slot, was not admitted again")
	}
	if w.Admit(&b.h, b, "k", Due{At: 2}, log) {
		t.Fatal("b admitted with no free worker")
	}
	// a's start ran nothing: its slot goes back, and b can be given it.
	a.h.Release()
	if a.h.Reserved() || r.released != 1 {
		t.Fatal("a's slot was not given back")
	}
	var got []string
	w.Grant(log, func(e *wrun) { got = append(got, e.name) })
	if !slices.Equal(got, []string{"b"}) {
		t.Fatalf("granted %v, want [b]", got)
	}
	if s := b.h.Take(); s == nil || b.h.Reserved() {
		t.Fatal("b's slot was not handed over by Take")
	}
}

func TestWorkerDrop(t *testing.T) {
	r := &fakeRemote{free: map[string]int{"k": 0}}
	w := NewWorkers[*wrun, *slot](r, "n1", nil)
	log, _ := newLog()
	var es []*wrun
	for i, name := range []string{"a", "b", "c"} {
		e := &wrun{name: name}
		w.Admit(&e.h, e, "k", Due{At: int64(i)}, log)
		es = append(es, e)
	}
	if !w.Drop(&es[1].h, log) || es[1].h.Waiting() {
		t.Fatal("b was not dropped")
	}
	if w.Drop(&es[1].h, log) {
		t.Fatal("b dropped twice")
	}
	var left []string
	for e := range w.All() {
		left = append(left, e.name)
	}
	slices.Sort(left)
	if !slices.Equal(left, []string{"a", "c"}) {
		t.Fatalf("waiting %v, want [a c]", left)
	}
}

func TestUnservedEpisodeOnce(t *testing.T) {
	r := &fakeRemote{free: map[string]int{}}
	w := NewWorkers[*wrun, *slot](r, "n1", nil)
	log, buf := newLog()
	for i := range 3 {
		e := &wrun{name: "r"}
		if w.Admit(&e.h, e, "k", Due{At: int64(i)}, log) {
			t.Fatal("admitted with no worker of the kind")
		}
	}
	w.Check(log) // nothing changed: no second beginning
	if n := strings.Count(buf.String(), "no handler and no connected worker serves the kind"); n != 1 {
		t.Fatalf("episode began %d times, want 1:\n%s", n, buf)
	}
	if got := w.Unserved()["k"]; got != 3 {
		t.Fatalf("unserved k = %d, want 3", got)
	}
	if reason := w.Reason("k", timeOf(0)); !strings.Contains(reason, `no handler or connected worker for kind "k" on node n1`) {
		t.Fatalf("reason = %q", reason)
	}
	// A worker of k connects (Check on the kinds' change), then slots are
	// handed out: the episode ends once.
	r.free["k"] = 0
	w.Check(log)
	r.free["k"] = 3
	w.Grant(log, func(*wrun) {})
	w.Check(log)
	if n := strings.Count(buf.String(), "no longer wait for want of a worker"); n != 1 {
		t.Fatalf("episode ended %d times, want 1:\n%s", n, buf)
	}
	if !strings.Contains(buf.String(), "a worker of the kind connected") {
		t.Fatalf("episode's end does not say a worker connected:\n%s", buf)
	}
	if w.Unserved() != nil {
		t.Fatalf("unserved = %v after the episode", w.Unserved())
	}
	if reason := w.Reason("k", timeOf(0)); !strings.Contains(reason, "is busy") {
		t.Fatalf("reason = %q after the episode", reason)
	}
}

func TestUnservedEpisodeEndsWhenNoRunWaits(t *testing.T) {
	r := &fakeRemote{free: map[string]int{}}
	w := NewWorkers[*wrun, *slot](r, "n1", map[string]bool{"d": true})
	log, buf := newLog()
	a, b := &wrun{name: "a"}, &wrun{name: "b"}
	w.Admit(&a.h, a, "d", Due{At: 1}, log)
	w.Admit(&b.h, b, "d", Due{At: 2}, log)
	if !strings.Contains(buf.String(), "declared kind wait for its first worker") {
		t.Fatalf("declared kind's episode not logged as such:\n%s", buf)
	}
	if reason := w.Reason("d", timeOf(0)); !strings.Contains(reason, "declared by --kinds") {
		t.Fatalf("reason = %q", reason)
	}
	w.Drop(&a.h, log)
	if strings.Contains(buf.String(), "no longer wait") {
		t.Fatalf("episode ended while b still waits:\n%s", buf)
	}
	w.Drop(&b.h, log)
	if n := strings.Count(buf.String(), "no run of the kind waits here any more"); n != 1 {
		t.Fatalf("episode ended %d times, want 1:\n%s", n, buf)
	}
	// A declared kind counts 0 while no run waits.
	if u := w.Unserved(); len(u) != 1 || u["d"] != 0 {
		t.Fatalf("unserved = %v, want map[d:0]", u)
	}
}

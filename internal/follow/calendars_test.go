package follow_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/internal/follow"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// A Saturday, a Monday and a Tuesday, noon UTC.
var (
	saturday = time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	monday   = saturday.AddDate(0, 0, 2)
	tuesday  = saturday.AddDate(0, 0, 3)
)

func weekly(name, base string, days ...string) *taskdv1.Calendar {
	return &taskdv1.Calendar{Name: name, Base: base, Kind: &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: days}}}
}

// excludes says which of saturday, monday and tuesday the exclusions of
// names exclude, as "S M T" with "-" for an included day ("" for no
// exclusions at all).
func excludes(c *follow.Calendars, names ...string) string {
	ex := c.Exclusions(names)
	if ex == nil {
		return ""
	}
	out := ""
	for i, d := range []time.Time{saturday, monday, tuesday} {
		mark := "-"
		if ex.Excludes(d) {
			mark = string("SMT"[i])
		}
		out += mark
	}
	return out
}

func TestCalendarDays(t *testing.T) {
	if saturday.Weekday() != time.Saturday || monday.Weekday() != time.Monday || tuesday.Weekday() != time.Tuesday {
		t.Fatalf("the test's days are %v, %v, %v", saturday.Weekday(), monday.Weekday(), tuesday.Weekday())
	}
}

// Load reads and compiles every calendar: a calendar based on another
// adds to its exclusions; one that does not compile (its base is missing)
// is stored but excludes nothing; one that does not decode is left out; a
// name not known excludes nothing.
func TestCalendarsLoadCompilesThem(t *testing.T) {
	c := newCluster(t)
	c.put(t, keys.Calendar("weekends"), weekly("weekends", "", "SAT", "SUN"))
	c.put(t, keys.Calendar("mondays"), weekly("mondays", "weekends", "MON"))
	c.put(t, keys.Calendar("broken"), weekly("broken", "missing", "TUE"))
	if _, err := c.plain.Put(ctxFor(t), keys.Calendar("junk"), "\xff\xff"); err != nil {
		t.Fatal(err)
	}
	cals := follow.NewCalendars(c.watch())
	if cals.Stored("weekends") {
		t.Fatal("stored before Load")
	}
	if err := cals.Load(ctxFor(t)); err != nil {
		t.Fatalf("Load: %v", err)
	}
	for name, want := range map[string]bool{"weekends": true, "mondays": true, "broken": true, "junk": false, "none": false} {
		if got := cals.Stored(name); got != want {
			t.Errorf("Stored(%q) = %v; want %v", name, got, want)
		}
	}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"none"}, ""},
		{[]string{"broken"}, ""},
		{[]string{"weekends"}, "S--"},
		{[]string{"mondays"}, "SM-"},
		{[]string{"weekends", "none"}, "S--"},
	} {
		if got := excludes(cals, tc.names...); got != tc.want {
			t.Errorf("the exclusions of %q: %q; want %q", tc.names, got, tc.want)
		}
	}
}

// The watch brings a calendar stored, replaced and deleted by another
// node; a calendar based on a replaced one follows it.
func TestCalendarsWatchBringsEachChange(t *testing.T) {
	c := newCluster(t)
	cals := follow.NewCalendars(c.watch())
	loadThenRun(t, cals)
	c.put(t, keys.Calendar("base"), weekly("base", "", "SAT"))
	c.put(t, keys.Calendar("top"), weekly("top", "base", "TUE"))
	tst.Eventually(t, wait, func() bool { return excludes(cals, "top") == "S-T" }, "top over base")
	c.put(t, keys.Calendar("base"), weekly("base", "", "MON"))
	tst.Eventually(t, wait, func() bool { return excludes(cals, "top") == "-MT" }, "top over the replaced base")
	c.del(t, keys.Calendar("top"))
	tst.Eventually(t, wait, func() bool { return !cals.Stored("top") }, "top deleted")
	if got := excludes(cals, "base"); got != "-M-" {
		t.Fatalf("base excludes %q; want -M-", got)
	}
}

// The node's own writes count at once (Learn, Forget), and concurrent
// changes are none of them lost.
func TestCalendarsLearnAndForget(t *testing.T) {
	c := newCluster(t)
	cals := follow.NewCalendars(c.watch())
	cals.Learn(weekly("sat", "", "SAT"))
	if got := excludes(cals, "sat"); got != "S--" {
		t.Fatalf("a learned calendar excludes %q; want S--", got)
	}
	cals.Forget("sat")
	if cals.Stored("sat") || excludes(cals, "sat") != "" {
		t.Fatal("a forgotten calendar is still known")
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cals.Learn(weekly(fmt.Sprintf("c%d", i), "", "MON"))
		}()
	}
	wg.Wait()
	for i := range 50 {
		if name := fmt.Sprintf("c%d", i); !cals.Stored(name) {
			t.Fatalf("%s, learned at the same time as others, was lost", name)
		}
	}
}

// The calendar whose event breaks the watch (the fault swallows the event)
// is found by the list that follows; the watch resumed after it brings
// the next changes.
func TestCalendarsBrokenWatchListsAgain(t *testing.T) {
	c := newCluster(t)
	brk := c.faults.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: keys.Calendar("lost"), Times: 1,
		Action: etcdfault.BreakWatch()})
	cals := follow.NewCalendars(c.watch())
	loadThenRun(t, cals)
	c.put(t, keys.Calendar("lost"), weekly("lost", "", "SAT"))
	tst.Eventually(t, wait, func() bool { return cals.Stored("lost") }, "the calendar, listed after the break")
	if brk.Hits() != 1 {
		t.Fatalf("the watch was broken %d times; want once", brk.Hits())
	}
	c.put(t, keys.Calendar("next"), weekly("next", "lost", "MON"))
	tst.Eventually(t, wait, func() bool { return excludes(cals, "next") == "SM-" }, "the next calendar, from the new watch")
	c.del(t, keys.Calendar("next"))
	tst.Eventually(t, wait, func() bool { return !cals.Stored("next") }, "the deletion, from the new watch")
}

// Read and ReadOne read etcd, not the copy, each calendar with its
// revision.
func TestCalendarsRead(t *testing.T) {
	c := newCluster(t)
	revA := c.put(t, keys.Calendar("a"), weekly("a", "", "SAT"))
	revB := c.put(t, keys.Calendar("b"), weekly("b", "a", "MON"))
	cals := follow.NewCalendars(c.watch())
	stored, err := cals.Read(ctxFor(t))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(stored) != 2 || stored["a"].GetRevision() != revA || stored["b"].GetRevision() != revB || stored["b"].GetBase() != "a" {
		t.Fatalf("Read = %v; want a at %d and b (based on a) at %d", stored, revA, revB)
	}
	one, err := cals.ReadOne(ctxFor(t), "b")
	if err != nil || one.GetRevision() != revB || one.GetName() != "b" {
		t.Fatalf("ReadOne(b) = %v, %v; want b at %d", one, err, revB)
	}
	if none, err := cals.ReadOne(ctxFor(t), "none"); none != nil || err != nil {
		t.Fatalf("ReadOne(none) = %v, %v; want nil, nil", none, err)
	}
	if cals.Stored("a") {
		t.Fatal("Read changed the copy")
	}
}

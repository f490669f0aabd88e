package taskservice_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// gate is a handler for several kinds that counts the runs in its handler
// at once, by kind and by identity. Runs of the kinds in hold block until
// the test lets one go (step) or all (open).
type gate struct {
	hold map[string]bool
	step chan struct{}
	open chan struct{}

	mu        sync.Mutex
	inFlight  map[string]int // by kind
	most      map[string]int // by kind
	perIdent  map[string]int // in flight, by identity
	mostIdent map[string]int // by identity
	calls     map[string]int // by task id
	order     []string       // "identity/task" in the order handlers were called
}

func newGate(hold ...string) *gate {
	g := &gate{hold: map[string]bool{}, step: make(chan struct{}), open: make(chan struct{}),
		inFlight: map[string]int{}, most: map[string]int{}, perIdent: map[string]int{},
		mostIdent: map[string]int{}, calls: map[string]int{}}
	for _, k := range hold {
		g.hold[k] = true
	}
	return g
}

func (g *gate) Work(ctx context.Context, r *taskservice.Run) error {
	g.mu.Lock()
	g.inFlight[r.Kind]++
	g.most[r.Kind] = max(g.most[r.Kind], g.inFlight[r.Kind])
	g.perIdent[r.Identity]++
	g.mostIdent[r.Identity] = max(g.mostIdent[r.Identity], g.perIdent[r.Identity])
	g.calls[r.TaskID]++
	g.order = append(g.order, r.Identity+"/"+r.TaskID)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight[r.Kind]--
		g.perIdent[r.Identity]--
		g.mu.Unlock()
	}()
	if g.hold[r.Kind] {
		select {
		case <-g.step:
		case <-g.open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (g *gate) now(kind string) (inFlight, most int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight[kind], g.most[kind]
}

func (g *gate) called(taskID string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[taskID]
}

func gateConfig(g *gate, limits map[string]int, kinds ...string) func(*taskservice.Config) {
	return func(c *taskservice.Config) {
		c.Handlers = map[string]taskservice.Handler{}
		for _, k := range kinds {
			c.Handlers[k] = g
		}
		c.KindLimits = limits
	}
}

// TestKindLimitIsNeverExceeded: with a limit of 2 on kind "slow", whose
// handlers block, 9 due slow runs of 3 identities make 2 run and 7 wait,
// while every run of kind "fast" (of the same identities, due after the
// slow ones) runs to completion meanwhile. When the slow handlers are let
// go, every slow run completes, never more than 2 at once.
func TestKindLimitIsNeverExceeded(t *testing.T) {
	g := newGate("slow")
	h := newHarness(t, gateConfig(g, map[string]int{"slow": 2}, "slow", "fast"))
	var slow, fast []*taskdv1.Task
	for _, id := range []string{"a", "b", "c"} {
		for range 3 {
			slow = append(slow, h.schedule(spec(id, "slow", now())))
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		for range 2 {
			fast = append(fast, h.schedule(spec(id, "fast", now())))
		}
	}
	tst.Eventually(t, 20*time.Second, func() bool {
		in, _ := g.now("slow")
		return in == 2 && h.node.Stats().WaitingForLimit["slow"] == 7
	}, "2 slow runs in flight and 7 waiting for the limit")
	for _, task := range fast {
		h.waitState(task.Spec.Identity, task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	}
	st := h.node.Stats()
	if in, most := g.now("slow"); in != 2 || most != 2 || st.WaitingForLimit["slow"] != 7 || st.Due < 7 {
		t.Fatalf("after the fast runs: %d slow in flight (most %d), %d waiting, %d due; want 2, 2, 7, at least 7",
			in, most, st.WaitingForLimit["slow"], st.Due)
	}
	released := time.Now()
	close(g.open)
	for _, task := range slow {
		h.waitState(task.Spec.Identity, task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	}
	// The runs that waited for the limit count their wait from when they
	// fell due: their Ready is before the release, their start after it.
	waited := 0
	h.ev.mu.Lock()
	for _, ev := range h.ev.evs {
		if ev.Type != taskservice.EventStarted || ev.Kind != "slow" {
			continue
		}
		if ev.Ready.IsZero() || ev.Ready.After(ev.Time) {
			t.Errorf("STARTED of %s: Ready %v, start %v; want a Ready no later than the start", ev.TaskID, ev.Ready, ev.Time)
		}
		if ev.Time.After(released) && ev.Ready.Before(released) {
			waited++
		}
	}
	h.ev.mu.Unlock()
	if waited != 7 {
		t.Errorf("%d runs started after the release with a Ready before it, want the 7 that waited", waited)
	}
	if _, most := g.now("slow"); most != 2 {
		t.Fatalf("most slow runs in flight at once: %d, want 2", most)
	}
	if w := h.node.Stats().WaitingForLimit["slow"]; w != 0 {
		t.Fatalf("%d runs still waiting for the limit, want 0", w)
	}
}

// TestKindLimitOfOneSerialisesAcrossIdentities: with a limit of 1, the
// runs of one kind of 4 identities (2 each) run one at a time, let go one
// by one. A freed turn goes to the identities in turn, not in arrival order
// (the first 5 runs include every identity), and each identity's runs of
// the kind keep their order.
func TestKindLimitOfOneSerialisesAcrossIdentities(t *testing.T) {
	g := newGate("one")
	h := newHarness(t, gateConfig(g, map[string]int{"one": 1}, "one"))
	ids := []string{"a", "b", "c", "d"}
	var tasks []*taskdv1.Task
	for _, id := range ids {
		for range 2 {
			tasks = append(tasks, h.schedule(spec(id, "one", now())))
		}
	}
	total := len(tasks)
	for i := range total {
		tst.Eventually(t, 20*time.Second, func() bool {
			in, _ := g.now("one")
			return in == 1 && h.node.Stats().WaitingForLimit["one"] == total-1-i
		}, "run %d in flight alone, %d waiting", i+1, total-1-i)
		g.step <- struct{}{}
	}
	for _, task := range tasks {
		h.waitState(task.Spec.Identity, task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	}
	if _, most := g.now("one"); most != 1 {
		t.Fatalf("most runs in flight at once: %d, want 1", most)
	}
	g.mu.Lock()
	order := append([]string(nil), g.order...)
	g.mu.Unlock()
	if len(order) != total {
		t.Fatalf("%d calls, want %d: %v", len(order), total, order)
	}
	first := map[string]bool{}
	for _, o := range order[:len(ids)+1] {
		first[strings.Split(o, "/")[0]] = true
	}
	if len(first) != len(ids) {
		t.Fatalf("the first %d runs were of %d identities, want all %d: %v", len(ids)+1, len(first), len(ids), order)
	}
	for _, id := range ids {
		var mine []string
		for _, o := range order {
			if strings.HasPrefix(o, id+"/") {
				mine = append(mine, o)
			}
		}
		if !slices.IsSorted(mine) {
			t.Fatalf("identity %s ran its tasks out of order: %v", id, mine)
		}
	}
}

// TestRunWaitingForALimitDoesNotStartWithoutAProvenLease: run A holds the
// only turn of its kind and B waits for it. The node's renewals (and any
// new lease) then fail until it can no longer prove its lease; A is let go.
// B gets the turn but does not start: it goes back to the timer queue,
// still due, and its handler is not called. Once renewals succeed again,
// B runs.
func TestRunWaitingForALimitDoesNotStartWithoutAProvenLease(t *testing.T) {
	e := tst.StartEtcd(t)
	in := etcdfault.New()
	g := newGate("lim")
	n := faultNode(t, e, "n1", in, g, nil, gateConfig(g, map[string]int{"lim": 1}, "lim"))
	a := scheduleOn(t, n, spec("ida", "lim", now()))
	tst.Eventually(t, 10*time.Second, func() bool { return g.called(a.Id) == 1 }, "A's handler")
	b := scheduleOn(t, n, spec("idb", "lim", now()))
	tst.Eventually(t, 10*time.Second, func() bool { return n.Stats().WaitingForLimit["lim"] == 1 }, "B waiting for the limit")

	renewals := in.Add(etcdfault.Rule{Op: etcdfault.OpKeepAliveOnce, Action: etcdfault.Fail(nil)})
	grants := in.Add(etcdfault.Rule{Op: etcdfault.OpGrant, Action: etcdfault.Fail(nil)})
	tst.Eventually(t, 10*time.Second, func() bool { ok, _ := n.Health(); return !ok }, "the lease to go unproven")
	g.step <- struct{}{} // A returns
	tst.Eventually(t, 10*time.Second, func() bool {
		s := n.Stats()
		return s.WaitingForLimit["lim"] == 0 && s.Running == 0 && s.Due == 1
	}, "B back in the queue, due, with nothing running")
	if ok, _ := n.Health(); ok {
		t.Fatal("the lease was proven again while renewals fail")
	}
	if c := g.called(b.Id); c != 0 {
		t.Fatalf("B's handler was called %d times without a proven lease, want 0", c)
	}
	renewals.Remove()
	grants.Remove()
	close(g.open)
	waitTaskState(t, n, "idb", b.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if c := g.called(b.Id); c != 1 {
		t.Fatalf("B's handler was called %d times, want 1", c)
	}
}

// TestHotIdentityLeavesWorkersToOthers: an identity whose many due runs
// block in their handlers holds at most its share of the workers (3 of 4),
// so another identity's run, due after all of them, still runs.
func TestHotIdentityLeavesWorkersToOthers(t *testing.T) {
	g := newGate("slow")
	h := newHarness(t, func(c *taskservice.Config) {
		gateConfig(g, nil, "slow")(c)
		c.Workers = 4
	})
	var hot []*taskdv1.Task
	for range 12 {
		hot = append(hot, h.schedule(spec("hot", "slow", now())))
	}
	tst.Eventually(t, 20*time.Second, func() bool {
		in, _ := g.now("slow")
		return in == 3 && h.node.Stats().Due == 9
	}, "3 of the hot identity's runs in flight and 9 due")
	cold := h.schedule(spec("cold", "slow", now()))
	tst.Eventually(t, 20*time.Second, func() bool { return g.called(cold.Id) == 1 }, "the cold identity's run")
	close(g.open)
	for _, task := range append(hot, cold) {
		h.waitState(task.Spec.Identity, task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mostIdent["hot"] != 3 {
		t.Fatalf("most runs of the hot identity in flight at once: %d, want 3", g.mostIdent["hot"])
	}
}

// TestKindLimitsAreChecked: a limit below 1 or of an empty kind is refused.
func TestKindLimitsAreChecked(t *testing.T) {
	e := tst.StartEtcd(t)
	cli := e.Client(t)
	for _, limits := range []map[string]int{{"k": 0}, {"k": -1}, {"": 2}} {
		_, err := taskservice.New(taskservice.Config{Name: "n1", Client: cli, KindLimits: limits})
		if err == nil || !strings.Contains(err.Error(), "KindLimits") {
			t.Errorf("KindLimits %v: error %v, want one naming Config.KindLimits", limits, err)
		}
	}
}

// TestRunWaitingForALimitLeavesWithItsIdentity: a run waits on node a for
// its kind's only turn while another identity's run holds it; its identity
// is moved to b. It leaves a's wait list at once (it does not wait there
// for a turn it would not use) and runs on b; a's turn is not lost: once
// the holder ends, a runs the kind again.
func TestRunWaitingForALimitLeavesWithItsIdentity(t *testing.T) {
	g := newGate("rec")
	c := newCluster(t, []string{"a", "b"}, func(cfg *taskservice.Config) {
		cfg.Handlers = map[string]taskservice.Handler{"rec": g}
		cfg.KindLimits = map[string]int{"rec": 1}
	})
	c.own("a", "ida")
	c.own("a", "idb")
	a := c.schedule("a", spec("ida", "rec", now()))
	tst.Eventually(t, 10*time.Second, func() bool { return g.called(a.Id) == 1 }, "A's handler on a")
	b := c.schedule("a", spec("idb", "rec", now()))
	tst.Eventually(t, 10*time.Second, func() bool { return c.nodes["a"].Stats().WaitingForLimit["rec"] == 1 }, "B waiting on a")
	c.move("a", "idb", "b")
	tst.Eventually(t, 10*time.Second, func() bool { return g.called(b.Id) == 1 }, "B's handler on b")
	tst.Eventually(t, 10*time.Second, func() bool { return c.nodes["a"].Stats().WaitingForLimit["rec"] == 0 },
		"B to leave a's wait list while A still holds the turn")
	if in, _ := g.now("rec"); in != 2 {
		t.Fatalf("%d runs in their handlers, want 2 (A on a, B on b)", in)
	}
	close(g.open)
	waitTaskState(t, c.nodes["a"], "ida", a.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	waitTaskState(t, c.nodes["a"], "idb", b.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	next := c.schedule("a", spec("ida", "rec", now()))
	waitTaskState(t, c.nodes["a"], "ida", next.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
}

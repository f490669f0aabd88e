package taskservice_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// cluster is several in-process nodes over one etcd, with fast relocation
// timings (Darkstar's multi-node tests use start 0, period 50, vote delay
// 50), sharing one recorder that notes which node ran what.
type cluster struct {
	t     *testing.T
	etcd  *tst.Etcd
	cli   *clientv3.Client
	nodes map[string]*tst.Node
	rec   *recorder
	ev    map[string]*events
}

func newCluster(t *testing.T, names []string, mod func(*taskservice.Config)) *cluster {
	t.Helper()
	c := &cluster{t: t, etcd: tst.StartEtcd(t), nodes: map[string]*tst.Node{}, rec: &recorder{}, ev: map[string]*events{}}
	c.cli = c.etcd.Client(t)
	for _, name := range names {
		c.start(name, mod)
	}
	return c
}

// fastConfig is a node's configuration with the fast relocation timings of
// the multi-node tests, running kind "rec" with h.
func fastConfig(name string, h taskservice.Handler, ev *events) taskservice.Config {
	cfg := taskservice.Config{
		Name:          name,
		LeaseTTL:      2 * time.Second,
		HandoffStart:  -1,
		HandoffPeriod: 50 * time.Millisecond,
		VoteDelay:     50 * time.Millisecond,
		RemoveDelay:   50 * time.Millisecond,
		DrainTimeout:  5 * time.Second,
		Handlers:      map[string]taskservice.Handler{"rec": h},
	}
	if ev != nil {
		cfg.Listeners = []taskservice.Listener{ev.listen}
	}
	return cfg
}

func (c *cluster) start(name string, mod func(*taskservice.Config)) *tst.Node {
	ev := &events{}
	cfg := fastConfig(name, c.rec, ev)
	if mod != nil {
		mod(&cfg)
	}
	n := tst.StartNode(c.t, c.etcd.Client(c.t), cfg)
	c.nodes[name] = n
	c.ev[name] = ev
	return n
}

func (c *cluster) schedule(via string, s *taskdv1.TaskSpec) *taskdv1.Task {
	c.t.Helper()
	h := &harness{t: c.t, node: c.nodes[via]}
	return h.schedule(s)
}

func (c *cluster) identity(via, id string) *taskdv1.Identity {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.nodes[via].Client.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: id})
	if err != nil {
		c.t.Fatalf("get identity %s: %v", id, err)
	}
	return resp.Identity
}

func (c *cluster) move(via, id, to string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.nodes[via].Client.MoveIdentity(ctx, &taskdv1.MoveIdentityRequest{Identity: id, ToNode: to}); err != nil {
		c.t.Fatalf("move %s to %s: %v", id, to, err)
	}
}

// nodesOf lists the nodes that ran task, in order.
func (c *cluster) nodesOf(taskID string) []string {
	var out []string
	for _, s := range c.rec.of(taskID) {
		out = append(out, s.Node)
	}
	return out
}

// own makes node the owner of id by scheduling a far-away task through it.
func (c *cluster) own(node, id string) {
	c.t.Helper()
	c.schedule(node, spec(id, "rec", after(time.Hour)))
	if got := c.identity(node, id).Node; got != node {
		c.t.Fatalf("%s is owned by %s, want %s", id, got, node)
	}
}

func TestTaskScheduledOnNonOwnerRunsOnOwner(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	c.own("b", "x")
	now := c.schedule("a", spec("x", "rec", now()))
	later := c.schedule("a", spec("x", "rec", after(200*time.Millisecond)))
	for _, task := range []*taskdv1.Task{now, later} {
		tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) == 1 }, "task %s to run", task.Id)
	}
	h := &harness{t: t, node: c.nodes["a"]}
	for _, task := range []*taskdv1.Task{now, later} {
		h.waitState("x", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
		if got := c.nodesOf(task.Id); fmt.Sprint(got) != "[b]" {
			t.Errorf("task %s ran on %v, want once on b", task.Id, got)
		}
	}
	if !c.ev["b"].has(taskservice.EventHandedOff, now.Id) {
		t.Error("b recorded no HANDED_OFF event for the task scheduled on a")
	}
}

func TestDelayedTaskMovedBeforeDueRunsOnceOnNewOwner(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	task := c.schedule("a", spec("y", "rec", after(500*time.Millisecond)))
	if got := c.identity("a", "y").Node; got != "a" {
		t.Fatalf("y mapped to %s, want a (locality)", got)
	}
	before := c.identity("a", "y").Epoch
	c.move("a", "y", "b")
	after := c.identity("a", "y")
	if after.Node != "b" || after.Epoch <= before {
		t.Fatalf("after the move: %v, want node b with a newer epoch than %d", after, before)
	}
	h := &harness{t: t, node: c.nodes["b"]}
	h.waitState("y", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if got := c.nodesOf(task.Id); fmt.Sprint(got) != "[b]" {
		t.Fatalf("ran on %v, want exactly once on b", got)
	}
	tst.Eventually(t, 5*time.Second, func() bool { return c.ev["a"].hasIdentity(taskservice.EventMoved, "y") },
		"a to record MOVED")
	if c.rec.of(task.Id)[0].Fence.Epoch != after.Epoch {
		t.Errorf("run fence %s, want the new epoch %d", c.rec.of(task.Id)[0].Fence, after.Epoch)
	}
}

func TestPeriodicTaskMovedBetweenPeriods(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	start := time.Now().Add(100 * time.Millisecond).Truncate(time.Millisecond)
	iv := 150 * time.Millisecond
	task := c.schedule("a", spec("p", "rec", every(start, iv, 0)))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) >= 3 }, "three runs on a")
	c.move("b", "p", "b")
	moved := time.Now()
	tst.Eventually(t, 10*time.Second, func() bool {
		n := 0
		for _, s := range c.rec.of(task.Id) {
			if s.Node == "b" {
				n++
			}
		}
		return n >= 3
	}, "three runs on b")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.nodes["b"].Client.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "p", TaskId: task.Id}); err != nil {
		t.Fatal(err)
	}
	calls := c.rec.of(task.Id)
	seen := map[int64]string{}
	for i, s := range calls {
		if prev, dup := seen[s.Fire.UnixNano()]; dup {
			t.Errorf("fire time %s ran twice (on %s and %s)", s.Fire, prev, s.Node)
		}
		seen[s.Fire.UnixNano()] = s.Node
		if k := s.Fire.Sub(start) / iv; !start.Add(k * iv).Equal(s.Fire) {
			t.Errorf("fire time %s is off the grid start+k*interval", s.Fire)
		}
		if i > 0 && !s.Fire.After(calls[i-1].Fire) {
			t.Errorf("fire times go back: %s after %s", s.Fire, calls[i-1].Fire)
		}
		// No catch-up burst: the new owner runs at most the period that was
		// due when it took over, then follows the grid.
		if s.Node == "b" && i > 0 && calls[i-1].Node == "b" && s.Fire.Sub(calls[i-1].Fire) != iv {
			t.Errorf("b skipped or doubled a period: %s then %s", calls[i-1].Fire, s.Fire)
		}
		if s.Node == "a" && s.Start.After(moved.Add(time.Second)) {
			t.Errorf("a ran a period at %s, after the move", s.Start)
		}
	}
}

func TestCancelFromNonOwnerStopsPeriodic(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	task := c.schedule("a", spec("q", "rec", every(time.Now(), 30*time.Millisecond, 0)))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) >= 2 }, "two runs")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.nodes["b"].Client.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "q", TaskId: task.Id}); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, node: c.nodes["a"]}
	// The owner hears of it through its handoff area and drops the timer;
	// a run in flight at that moment still commits, then nothing more.
	tst.Eventually(t, 5*time.Second, func() bool {
		return h.get("q", task.Id).LastRun.GetRunNumber() == int64(len(c.rec.of(task.Id)))
	}, "the last run to commit")
	n := len(c.rec.of(task.Id))
	probe := c.schedule("b", spec("q", "rec", after(200*time.Millisecond)))
	h.waitState("q", probe.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if m := len(c.rec.of(task.Id)); m != n {
		t.Fatalf("cancelled task ran %d more times", m-n)
	}
}

// statusVotes counts the writes of an identity's status key and records
// the statuses written.
func statusVotes(t *testing.T, cli *clientv3.Client, id string) func() []string {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var votes []string
	done := make(chan struct{})
	ch := cli.Watch(ctx, "/taskd/status/"+id)
	go func() {
		defer close(done)
		for resp := range ch {
			for _, ev := range resp.Events {
				mu.Lock()
				if ev.Type == clientv3.EventTypeDelete {
					votes = append(votes, "deleted")
				} else {
					votes = append(votes, fmt.Sprintf("%x", ev.Kv.Value)) // decoded below
				}
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), votes...)
	}
}

// The status vote: one active vote for many tasks, one inactive vote when
// they are done, and a change that flips back within the vote delay sends
// nothing. The last is checked by order, not by time: the voter sends its
// votes one at a time in the order they fall due, so once a vote queued
// after the flip-back is written, a vote the flip would have caused would
// have been written before it.
func TestActiveVoteIsSentOnceAfterTheDelay(t *testing.T) {
	// Long enough that two API calls made back to back (the flip and the
	// flip back) fall inside it.
	const delay = 1500 * time.Millisecond
	release := make(chan struct{})
	c := newCluster(t, []string{"a"}, func(cfg *taskservice.Config) {
		cfg.VoteDelay = delay
		cfg.RemoveDelay = time.Hour // keep the identity mapped for the assertions
	})
	c.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		<-release
		return nil
	}
	votes := statusVotes(t, c.cli, "v")
	var ids []string
	for range 5 {
		ids = append(ids, c.schedule("a", spec("v", "rec", now())).Id)
	}
	// One active vote after the delay, not five.
	tst.Eventually(t, 5*delay, func() bool { return len(votes()) >= 1 }, "the active vote")
	id := c.identity("a", "v")
	if !id.Active || id.StatusNode != "a" {
		t.Fatalf("status %v, want active on a", id)
	}
	close(release)
	h := &harness{t: t, node: c.nodes["a"]}
	for _, tid := range ids {
		h.waitState("v", tid, taskdv1.TaskState_TASK_STATE_COMPLETED)
	}
	tst.Eventually(t, 5*delay, func() bool { return len(votes()) >= 2 }, "the inactive vote")
	if id := c.identity("a", "v"); id.Active {
		t.Fatalf("status %v, want inactive", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	statusRev := func(id string) int64 {
		resp, err := c.cli.Get(ctx, "/taskd/status/"+id)
		if err != nil {
			t.Fatalf("read status of %s: %v", id, err)
		}
		if len(resp.Kvs) == 0 {
			return 0
		}
		return resp.Kvs[0].ModRevision
	}
	before := statusRev("v")

	// The flip: a task becomes pending (active), and right away it is
	// cancelled (inactive again, as voted).
	flipAt := time.Now()
	flip := c.schedule("a", spec("v", "rec", after(time.Hour)))
	if _, err := c.nodes["a"].Client.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "v", TaskId: flip.Id}); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if took := time.Since(flipAt); took >= delay {
		t.Fatalf("the flip and flip back took %s, not within the vote delay %s: the test could not set up its case", took, delay)
	}
	// A vote queued now, for another identity, falls due after any vote
	// the flip could have queued.
	c.schedule("a", spec("w", "rec", after(time.Hour)))
	tst.Eventually(t, 5*delay, func() bool { return statusRev("w") != 0 }, "the first vote of w")
	if after := statusRev("v"); after != before {
		t.Errorf("v's status was written again (revision %d, was %d) although its flip went back within the delay: %v",
			after, before, votes())
	}
	if n := len(votes()); n != 2 {
		t.Errorf("%d status writes for v, want 2 (one active, one inactive): %v", n, votes())
	}
}

func TestInactiveIdentityIsUnmappedAndMappedAgain(t *testing.T) {
	c := newCluster(t, []string{"a"}, func(cfg *taskservice.Config) {
		cfg.Retention = 100 * time.Millisecond
	})
	task := c.schedule("a", spec("u", "rec", now()))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) == 1 }, "the run")
	// Completed, purged after the retention, inactive, then unmapped.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tst.Eventually(t, 10*time.Second, func() bool {
		_, err := c.nodes["a"].Client.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: "u"})
		return err != nil
	}, "the identity to be unmapped")
	resp, err := c.cli.Get(ctx, "/taskd/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if s := string(kv.Key); contains(s, "/u/") || contains(s, "/u") && !contains(s, "/nodes/") && !contains(s, "/leader") {
			t.Errorf("key %s left after unmapping", s)
		}
	}
	again := c.schedule("a", spec("u", "rec", now()))
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(again.Id)) == 1 }, "the run after remapping")
	if id := c.identity("a", "u"); !id.Mapped || id.Node != "a" {
		t.Errorf("identity %v, want mapped to a again", id)
	}
}

func TestHandoffPollingWithoutWatch(t *testing.T) {
	c := newCluster(t, []string{"a"}, nil)
	c.start("b", func(cfg *taskservice.Config) {
		cfg.DisableHandoffWatch = true
		cfg.HandoffPeriod = 100 * time.Millisecond
	})
	c.own("a", "w")
	task := c.schedule("a", spec("w", "rec", every(time.Now(), 50*time.Millisecond, 0)))
	tst.Eventually(t, 5*time.Second, func() bool { return len(c.rec.of(task.Id)) >= 1 }, "a run on a")
	c.move("a", "w", "b")
	tst.Eventually(t, 5*time.Second, func() bool {
		for _, s := range c.rec.of(task.Id) {
			if s.Node == "b" {
				return true
			}
		}
		return false
	}, "b to pick the identity up by polling")
	if !c.ev["b"].hasIdentity(taskservice.EventHandedOff, "w") {
		t.Error("no HANDED_OFF on b")
	}
}

func TestDrainHandsIdentitiesToOtherNodes(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	var tasks []*taskdv1.Task
	// Due when the drain is surely over (scheduling and draining take
	// milliseconds; the margin is for a loaded machine): they must run on b.
	at := time.Now().Add(2 * time.Second)
	for i := range 5 {
		id := fmt.Sprintf("d%d", i)
		tasks = append(tasks, c.schedule("a", spec(id, "rec", once(at))))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.nodes["a"].Drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	<-c.nodes["a"].Done()
	for i, task := range tasks {
		id := fmt.Sprintf("d%d", i)
		if got := c.identity("b", id).Node; got != "b" {
			t.Errorf("%s mapped to %s after the drain, want b", id, got)
		}
		h := &harness{t: t, node: c.nodes["b"]}
		h.waitState(id, task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
		if got := c.nodesOf(task.Id); fmt.Sprint(got) != "[b]" {
			t.Errorf("task of %s ran on %v, want once on b", id, got)
		}
	}
}

// A node that dies with a run in flight — cut off from etcd at once, its
// lease left to expire, its handler never returning in time — has its
// identities reassigned by the placement leader; the survivor records the
// run INTERRUPTED (naming the dead incarnation) and runs its fire time again
// with the same run number, as a recovery, under a newer epoch.
// (integration/TestFailoverAfterSIGKILL does the same with a real SIGKILL.)
func TestDeadNodeIdentitiesAreReassigned(t *testing.T) {
	c := newCluster(t, []string{"b"}, nil)
	release := make(chan struct{})
	c.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		if r.Node == "a" {
			select { // in flight until a is long dead
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}
	// a gets an etcd client of its own, so that the test can cut it off.
	aCli := c.etcd.Client(t)
	ev := &events{}
	a := tst.StartNode(t, aCli, taskservice.Config{
		Name: "a", LeaseTTL: 2 * time.Second, HandoffStart: -1, HandoffPeriod: 50 * time.Millisecond,
		VoteDelay: 50 * time.Millisecond, RemoveDelay: 50 * time.Millisecond,
		Handlers: map[string]taskservice.Handler{"rec": c.rec}, Listeners: []taskservice.Listener{ev.listen},
	})
	t.Cleanup(func() { close(release) }) // before a is stopped
	c.nodes["a"], c.ev["a"] = a, ev
	task := c.schedule("a", spec("z", "rec", now()))
	if got := c.identity("b", "z").Node; got != "a" {
		t.Fatalf("z mapped to %s, want a", got)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) == 1 }, "the run to start on a")
	first := c.rec.of(task.Id)[0]
	if first.Node != "a" {
		t.Fatalf("first run on %s, want a", first.Node)
	}

	// a dies: from now on it reaches etcd no more; its lease expires.
	diedAt := time.Now()
	if err := aCli.Close(); err != nil {
		t.Logf("close a's etcd client: %v", err)
	}
	tst.Eventually(t, 20*time.Second, func() bool { return len(c.rec.of(task.Id)) == 2 }, "the run to be executed again on b")
	again := c.rec.of(task.Id)[1]
	t.Logf("a cut off → the run executed again on b after %s (lease TTL 2s)", again.Start.Sub(diedAt).Round(time.Millisecond))
	if again.Node != "b" || again.Run != first.Run || !again.Recovery || again.Attempt != first.Attempt {
		t.Errorf("second execution %+v: want run %d again on b, as a recovery", again, first.Run)
	}
	if again.Fence.Epoch <= first.Fence.Epoch {
		t.Errorf("fences %s then %s: want a newer epoch on b", first.Fence, again.Fence)
	}
	h := &harness{t: t, node: c.nodes["b"]}
	got := h.waitState("z", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if id := c.identity("b", "z"); id.Node != "b" {
		t.Errorf("z mapped to %s, want b", id.Node)
	}
	runs := h.runs("z", task.Id)
	if len(runs) != 2 {
		t.Fatalf("history %v: want the interrupted run and its recovery", runs)
	}
	if r := runs[1]; r.RunNumber != first.Run || r.Outcome != taskdv1.Outcome_OUTCOME_INTERRUPTED || r.Node != "a" ||
		!contains(r.Message, a.Incarnation()) {
		t.Errorf("oldest history entry %v: want run %d INTERRUPTED on a, naming incarnation %s", r, first.Run, a.Incarnation())
	}
	if r := runs[0]; r.RunNumber != first.Run || r.Outcome != taskdv1.Outcome_OUTCOME_SUCCESS || r.Node != "b" || !r.Recovery ||
		r.Fence != again.Fence.String() {
		t.Errorf("newest history entry %v: want run %d SUCCESS on b, recovery, fence %s", r, first.Run, again.Fence)
	}
	if got.RunCount != 1 || got.LastRun.GetNode() != "b" {
		t.Errorf("task %v: want run_count 1, last run on b", got)
	}
}

func TestMoveToNodeThatIsNotRunningFails(t *testing.T) {
	c := newCluster(t, []string{"a"}, nil)
	c.own("a", "m")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.nodes["a"].Client.MoveIdentity(ctx, &taskdv1.MoveIdentityRequest{Identity: "m", ToNode: "nobody"})
	if code := statusCode(err); code != "FailedPrecondition" {
		t.Fatalf("move to an unknown node: %v, want FailedPrecondition", err)
	}
}

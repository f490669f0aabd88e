package taskservice_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// rounds records the rebalancing rounds a leader reports (the moves of
// each).
type rounds struct {
	mu    sync.Mutex
	moves []int
}

func (r *rounds) observe(k int) {
	r.mu.Lock()
	r.moves = append(r.moves, k)
	r.mu.Unlock()
}

func (r *rounds) all() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.moves...)
}

// rebalancing sets fast rebalancing rounds of at most rate moves, reported
// to r.
func rebalancing(rate int, r *rounds) func(*taskservice.Config) {
	return func(c *taskservice.Config) {
		c.RebalanceInterval = 100 * time.Millisecond
		c.RebalanceRate = rate
		c.Observer.RebalanceMoves = r.observe
	}
}

// ownedBy counts the identities in node's ownership index.
func ownedBy(t *testing.T, cli *clientv3.Client, node string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/taskd/owned/"+node+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("count identities of %s: %v", node, err)
	}
	return resp.Count
}

// TestRebalanceGivesAJoiningNodeItsShare starts a second node beside one
// that owns 100 identities: the placement leader has identities moved to it
// until the counts differ by at most the tolerance (10% of the mean: 5),
// never more than the rate (10) in one request, each a MOVED event on the
// old owner and a HANDED_OFF on the new one.
func TestRebalanceGivesAJoiningNodeItsShare(t *testing.T) {
	const ids, rate = 100, 10
	r := &rounds{}
	c := newCluster(t, []string{"a"}, rebalancing(rate, r))
	specs := make([]*taskdv1.TaskSpec, ids)
	for i := range specs {
		specs[i] = spec(fmt.Sprintf("id-%03d", i), "rec", after(time.Hour))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.nodes["a"].Client.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: specs}); err != nil {
		t.Fatalf("schedule: %v", err)
	}
	if got := ownedBy(t, c.cli, "a"); got != ids {
		t.Fatalf("a owns %d identities, want %d", got, ids)
	}
	c.start("b", rebalancing(rate, r))

	slack := int64(ids * taskservice.DefaultRebalanceTolerance / 100 / 2)
	tst.Eventually(t, 30*time.Second, func() bool {
		a, b := ownedBy(t, c.cli, "a"), ownedBy(t, c.cli, "b")
		return a+b == ids && a-b <= slack && b-a <= slack
	}, "the identities spread over a and b within %d", slack)
	a, b := ownedBy(t, c.cli, "a"), ownedBy(t, c.cli, "b")
	// The source reports a request's moves once they are made.
	tst.Eventually(t, 10*time.Second, func() bool {
		total := 0
		for _, k := range r.all() {
			total += k
		}
		return int64(total) >= b
	}, "the moves to be reported")
	all := r.all()
	t.Logf("a %d, b %d after %d rounds of moves %v", a, b, len(all), all)
	total := 0
	for _, k := range all {
		if k > rate {
			t.Errorf("a round moved %d identities, more than the rate %d: %v", k, rate, all)
		}
		total += k
	}
	if int64(total) != b {
		t.Errorf("the rounds moved %d identities, b owns %d", total, b)
	}
	if len(all) < int(b)/rate {
		t.Errorf("%d identities moved in %d rounds, want at least %d rounds", b, len(all), int(b)/rate)
	}
	// Every identity b owns was moved from a as a planned move: a told it
	// MOVED, b took it over.
	tst.Eventually(t, 10*time.Second, func() bool {
		moved, handed := 0, 0
		for i := range ids {
			id := fmt.Sprintf("id-%03d", i)
			if c.ev["a"].hasIdentity(taskservice.EventMoved, id) {
				moved++
			}
			if c.ev["b"].hasIdentity(taskservice.EventHandedOff, id) {
				handed++
			}
		}
		return int64(moved) == b && int64(handed) == b
	}, "a MOVED and a HANDED_OFF event for each identity moved")
}

// leaderIs waits for name to hold the placement leadership.
func leaderIs(t *testing.T, cli *clientv3.Client, name string) {
	t.Helper()
	tst.Eventually(t, 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cli.Get(ctx, "/taskd/leader")
		return err == nil && len(resp.Kvs) == 1 && strings.HasPrefix(string(resp.Kvs[0].Value), name+" ")
	}, "%s to be the placement leader", name)
}

// requestsServed counts the rebalancing requests to node that were taken
// off its control area (served or refused), as a watch sees them.
func requestsServed(t *testing.T, cli *clientv3.Client, node string) func() int {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	served := 0
	done := make(chan struct{})
	wch := cli.Watch(ctx, "/taskd/control/"+node+"/rebalance")
	go func() {
		defer close(done)
		for resp := range wch {
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypeDelete {
					mu.Lock()
					served++
					mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return served
	}
}

// TestRebalanceNeverMovesARunInFlight has the placement leader (b, started
// first) rebalance a node (a) with three identities whose runs are in
// flight, each longer than the drain timeout, and one idle identity: the
// idle one is moved, the busy ones stay on a while their runs go on,
// round after round (the leader keeps asking for a move), and each run is
// executed exactly once, on a.
func TestRebalanceNeverMovesARunInFlight(t *testing.T) {
	const drainTimeout = 2 * time.Second
	short := func(c *taskservice.Config) { c.DrainTimeout = drainTimeout }
	r := &rounds{}
	c := newCluster(t, []string{"b"}, func(c *taskservice.Config) { rebalancing(10, r)(c); short(c) })
	leaderIs(t, c.cli, "b")
	c.start("a", func(c *taskservice.Config) { rebalancing(10, r)(c); short(c) })
	served := requestsServed(t, c.cli, "a")

	busy := []string{"a-busy1", "a-busy2", "a-busy3"}
	release := make(chan struct{})
	started := make(chan string, len(busy))
	c.rec.behave = func(ctx context.Context, run *taskservice.Run, _ int) error {
		if !strings.HasPrefix(run.Identity, "a-busy") {
			return nil
		}
		started <- run.Identity
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	tasks := map[string]*taskdv1.Task{}
	for _, id := range busy {
		tasks[id] = c.schedule("a", spec(id, "rec", now()))
	}
	for range busy {
		select {
		case <-started:
		case <-time.After(20 * time.Second):
			t.Fatal("the runs did not start on a")
		}
	}
	// Four identities on a, none on b: the leader asks a for two moves,
	// then (3 against 1) for one more every round. Only the idle one may
	// go; in a's index it comes after the busy ones.
	c.own("a", "z-idle")
	// Until the idle one moved and a has answered requests over twice the
	// drain timeout, or a run was called again.
	need := int(2 * drainTimeout / (100 * time.Millisecond))
	tst.Eventually(t, 60*time.Second, func() bool {
		for _, id := range busy {
			if len(c.rec.of(tasks[id].Id)) > 1 {
				return true
			}
		}
		return c.identity("b", "z-idle").Node == "b" && served() >= need
	}, "the idle identity to be moved to b, and a to answer %d rebalancing requests", need)
	for _, id := range busy {
		if got := c.identity("b", id).Node; got != "a" {
			t.Errorf("%s, with a run in flight, was moved to %s", id, got)
		}
		if c.ev["a"].hasIdentity(taskservice.EventMoved, id) {
			t.Errorf("a recorded a MOVED event for %s, whose run is in flight", id)
		}
		if calls := c.nodesOf(tasks[id].Id); len(calls) != 1 {
			t.Errorf("%s's run was called on %v while it was in flight on a", id, calls)
		}
	}
	if got := c.identity("b", "z-idle").Node; got != "b" {
		t.Errorf("the idle identity is on %s, want b", got)
	}
	released = true
	close(release)

	h := &harness{t: t, node: c.nodes["a"]}
	for _, id := range busy {
		h.waitState(id, tasks[id].Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
		if got := c.nodesOf(tasks[id].Id); fmt.Sprint(got) != "[a]" {
			t.Errorf("%s's run was executed on %v, want once on a", id, got)
		}
		runs := h.runs(id, tasks[id].Id)
		if len(runs) != 1 || runs[0].Outcome != taskdv1.Outcome_OUTCOME_SUCCESS || runs[0].Node != "a" {
			t.Errorf("%s's history %v: want one SUCCESS run, on a", id, runs)
		}
	}
	if moves := r.all(); len(moves) == 0 {
		t.Error("no rebalancing moves were reported")
	}
}

// TestRebalanceRequestForAnEarlierIncarnationIsOnlyDeleted writes
// rebalancing requests into a's control area by hand (rebalancing itself
// is off, so no leader writes any): one for an earlier incarnation of a is
// deleted and moves nothing; the same for a's current incarnation, from
// the current leadership, moves the identity asked for and is deleted.
func TestRebalanceRequestForAnEarlierIncarnationIsOnlyDeleted(t *testing.T) {
	off := func(c *taskservice.Config) { c.DisableRebalance = true }
	c := newCluster(t, []string{"a", "b"}, off)
	c.own("a", "id-1")
	c.own("a", "id-2")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leader, err := c.cli.Get(ctx, "/taskd/leader")
	if err != nil || len(leader.Kvs) != 1 {
		t.Fatalf("read the leader key: %v", err)
	}
	reg, err := c.cli.Get(ctx, "/taskd/nodes/b")
	if err != nil || len(reg.Kvs) != 1 {
		t.Fatalf("read b's registration: %v", err)
	}
	request := func(source string) string {
		return fmt.Sprintf("rebalance v1\nsource %s\nleader %d x\nto b %s %d %d 1\n", source,
			leader.Kvs[0].CreateRevision, c.nodes["b"].Incarnation(), reg.Kvs[0].Lease, reg.Kvs[0].ModRevision)
	}
	key := "/taskd/control/a/rebalance"
	gone := func() bool {
		resp, err := c.cli.Get(ctx, key)
		return err == nil && len(resp.Kvs) == 0
	}

	if _, err := c.cli.Put(ctx, key, request("00000000000000ff")); err != nil {
		t.Fatalf("write the stale request: %v", err)
	}
	tst.Eventually(t, 10*time.Second, gone, "a to delete the request for an earlier incarnation")
	if got := ownedBy(t, c.cli, "a"); got != 2 {
		t.Errorf("a owns %d identities after a stale request, want 2", got)
	}
	if c.ev["a"].hasIdentity(taskservice.EventMoved, "id-1") || c.ev["a"].hasIdentity(taskservice.EventMoved, "id-2") {
		t.Error("a stale request moved an identity")
	}

	if _, err := c.cli.Put(ctx, key, request(c.nodes["a"].Incarnation())); err != nil {
		t.Fatalf("write the request: %v", err)
	}
	tst.Eventually(t, 10*time.Second, func() bool {
		return gone() && ownedBy(t, c.cli, "a") == 1 && ownedBy(t, c.cli, "b") == 1
	}, "a to move one identity to b and delete the request")
}

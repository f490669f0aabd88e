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
// that owns 100 identities: the placement leader moves identities to it
// until the counts differ by at most the tolerance (10% of the mean: 5),
// never more than the rate (10) in one round, each a MOVED event on the old
// owner and a HANDED_OFF on the new one.
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

// TestRebalanceMoveOfARunInFlightRunsItOnce has the placement leader (b,
// started first) rebalance an identity of a whose run is in flight (the
// leader cannot know): the run goes on on a, its result reaches b, and the
// run is executed exactly once and committed once, SUCCESS.
func TestRebalanceMoveOfARunInFlightRunsItOnce(t *testing.T) {
	r := &rounds{}
	c := newCluster(t, []string{"b"}, rebalancing(10, r))
	tst.Eventually(t, 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.cli.Get(ctx, "/taskd/leader")
		return err == nil && len(resp.Kvs) == 1 && strings.HasPrefix(string(resp.Kvs[0].Value), "b ")
	}, "b to be the placement leader")
	c.start("a", nil)

	release := make(chan struct{})
	started := make(chan struct{}, 1)
	c.rec.behave = func(ctx context.Context, run *taskservice.Run, _ int) error {
		if run.Identity != "a-busy" {
			return nil
		}
		started <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	task := c.schedule("a", spec("a-busy", "rec", now()))
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not start on a")
	}
	// A second identity on a: the spread (2) is over the slack (1), and
	// the first identity in a's index, the busy one, is moved to b.
	c.own("a", "b-idle")
	tst.Eventually(t, 20*time.Second, func() bool { return c.identity("a", "a-busy").Node == "b" },
		"the busy identity to be moved to b")
	if !c.ev["a"].hasIdentity(taskservice.EventMoved, "a-busy") {
		t.Error("a recorded no MOVED event for the identity rebalanced away")
	}
	close(release)

	h := &harness{t: t, node: c.nodes["b"]}
	h.waitState("a-busy", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if got := c.nodesOf(task.Id); fmt.Sprint(got) != "[a]" {
		t.Errorf("the run was executed on %v, want once on a", got)
	}
	runs := h.runs("a-busy", task.Id)
	if len(runs) != 1 || runs[0].Outcome != taskdv1.Outcome_OUTCOME_SUCCESS || runs[0].Node != "a" {
		t.Errorf("history %v: want one SUCCESS run, on a", runs)
	}
	if moves := r.all(); len(moves) == 0 {
		t.Error("the leader reported no rebalancing round")
	}
}

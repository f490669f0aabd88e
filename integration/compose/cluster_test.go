//go:build compose

package compose

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// waitRunning waits until every named node is RUNNING and serves its API.
func (c *cluster) waitRunning(ctx context.Context, names ...string) {
	c.t.Helper()
	c.poll(ctx, fmt.Sprintf("%v RUNNING", names), func(ctx context.Context) (bool, error) {
		for _, n := range names {
			resp, err := c.clients[n].ListNodes(ctx, &taskdv1.ListNodesRequest{})
			if err != nil {
				return false, err
			}
			running := false
			for _, node := range resp.GetNodes() {
				if node.GetName() == n && node.GetState() == taskdv1.NodeState_NODE_STATE_RUNNING {
					running = true
				}
			}
			if !running {
				return false, fmt.Errorf("%s not RUNNING in its own node list", n)
			}
		}
		return true, nil
	})
}

func identity(i int) string { return fmt.Sprintf("user-%02d", i) }

// schedule schedules identities×perID periodic tasks, each batch through
// taskd-1 or taskd-2 in turn, and returns their ids by identity.
func (c *cluster) schedule(ctx context.Context) map[string][]string {
	c.t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	var specs []*taskdv1.TaskSpec
	start := time.Now().Add(5 * time.Second)
	for i := 0; i < identities; i++ {
		for j := 0; j < perID; j++ {
			first := start.Add(time.Duration(r.Int64N(int64(interval))))
			specs = append(specs, &taskdv1.TaskSpec{
				Identity: identity(i), Kind: "demo", Scope: taskdv1.Scope_SCOPE_IDENTITY,
				Payload: []byte(fmt.Sprintf("%d.%d", i, j)),
				Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
					Start: timestamppb.New(first), Interval: durationpb.New(interval), Count: periods,
				}}}},
				// Every period runs, however late a fault makes it.
				Misfire: taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL,
			})
		}
	}
	ids := map[string][]string{}
	for b := 0; b*100 < len(specs); b++ {
		via := nodeNames[b%2]
		rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		resp, err := c.clients[via].ScheduleTasks(rctx, &taskdv1.ScheduleTasksRequest{Tasks: specs[b*100 : min(len(specs), (b+1)*100)]})
		cancel()
		if err != nil {
			c.t.Fatalf("schedule batch %d through %s: %v", b, via, err)
		}
		for _, task := range resp.GetTasks() {
			ids[task.GetSpec().GetIdentity()] = append(ids[task.GetSpec().GetIdentity()], task.GetId())
		}
	}
	c.t.Logf("scheduled %d periodic tasks (%d runs each, every %s) for %d identities through taskd-1 and taskd-2",
		len(specs), periods, interval, identities)
	return ids
}

// owners maps every identity to its owner, asked through via.
func (c *cluster) owners(ctx context.Context, via string) map[string]string {
	c.t.Helper()
	out := map[string]string{}
	c.poll(ctx, "identity owners", func(ctx context.Context) (bool, error) {
		for i := 0; i < identities; i++ {
			resp, err := c.clients[via].GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: identity(i)})
			if err != nil {
				return false, err
			}
			if !resp.GetIdentity().GetMapped() {
				return false, fmt.Errorf("%s not mapped", identity(i))
			}
			out[identity(i)] = resp.GetIdentity().GetNode()
		}
		return true, nil
	})
	return out
}

// spread moves identity i to node i%3, so that each node owns some.
func (c *cluster) spread(ctx context.Context) {
	c.t.Helper()
	for i := 0; i < identities; i++ {
		to := nodeNames[i%len(nodeNames)]
		rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		_, err := c.clients["taskd-1"].MoveIdentity(rctx, &taskdv1.MoveIdentityRequest{Identity: identity(i), ToNode: to})
		cancel()
		if err != nil {
			c.t.Fatalf("move %s to %s: %v", identity(i), to, err)
		}
	}
}

// wantOwner fails unless node owns an identity, so that a fault on it
// tests something.
func (c *cluster) wantOwner(owners map[string]string, node string) {
	c.t.Helper()
	if countOwners(owners)[node] == 0 {
		c.t.Fatalf("%s owns no identity before its fault: %v", node, countOwners(owners))
	}
}

func countOwners(owners map[string]string) map[string]int {
	n := map[string]int{}
	for _, o := range owners {
		n[o]++
	}
	return n
}

// waitShare waits until node owns identities again and the three nodes'
// counts differ by at most the rebalancing tolerance (10% of the mean, at
// least one); it returns how long that took.
func (c *cluster) waitShare(ctx context.Context, node string) time.Duration {
	c.t.Helper()
	slack := max(identities*10/100/len(nodeNames), 1)
	return c.poll(ctx, node+" owns its share of the identities again", func(ctx context.Context) (bool, error) {
		counts := map[string]int{}
		for i := 0; i < identities; i++ {
			resp, err := c.clients["taskd-1"].GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: identity(i)})
			if err != nil {
				return false, err
			}
			counts[resp.GetIdentity().GetNode()]++
		}
		lo, hi := identities, 0
		for _, n := range nodeNames {
			lo, hi = min(lo, counts[n]), max(hi, counts[n])
		}
		if counts[node] == 0 || hi-lo > slack {
			return false, fmt.Errorf("identities per node %v: want each within %d of the others", counts, slack)
		}
		return true, nil
	})
}

// waitMoved waits until none of the identities owners gave to node is
// owned by it any more, asked through via; it returns how long that took.
func (c *cluster) waitMoved(ctx context.Context, via, node string, owners map[string]string) time.Duration {
	c.t.Helper()
	return c.poll(ctx, "identities of "+node+" moved", func(ctx context.Context) (bool, error) {
		for id, o := range owners {
			if o != node {
				continue
			}
			resp, err := c.clients[via].GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: id})
			if err != nil {
				return false, err
			}
			if got := resp.GetIdentity().GetNode(); got == node || !resp.GetIdentity().GetMapped() {
				return false, fmt.Errorf("%s still on %q", id, got)
			}
		}
		return true, nil
	})
}

// wantLog fails unless the service's log contains text.
func (c *cluster) wantLog(ctx context.Context, service, text string) {
	c.t.Helper()
	var out string
	if err := c.cmd(ctx, &out, c.argv[0], append(slices.Clone(c.argv[1:]), "logs", "--no-color", service)...); err != nil {
		c.t.Fatal(err)
	}
	if !strings.Contains(out, text) {
		c.t.Fatalf("the log of %s does not contain %q", service, text)
	}
}

// logTime returns the time of the first line of the service's log after
// since that contains text (taskd's lines begin with an RFC 3339 time).
func (c *cluster) logTime(ctx context.Context, service, text string, since time.Time) (time.Time, bool) {
	c.t.Helper()
	var out string
	if err := c.cmd(ctx, &out, c.argv[0], append(slices.Clone(c.argv[1:]), "logs", "--no-color", service)...); err != nil {
		c.t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(line, "| ")
		if !ok || !strings.Contains(rest, text) {
			continue
		}
		stamp, _, _ := strings.Cut(rest, " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err == nil && at.After(since) {
			return at, true
		}
	}
	return time.Time{}, false
}

// oneShot schedules a one-shot task through via and waits for its SUCCESS.
func (c *cluster) oneShot(ctx context.Context, via, name string) {
	c.t.Helper()
	rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	resp, err := c.clients[via].ScheduleTask(rctx, &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{
		Identity: "probe-" + name, Kind: "demo", Scope: taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}},
	}})
	cancel()
	if err != nil {
		c.t.Fatalf("%s: schedule: %v", name, err)
	}
	d := c.poll(ctx, name+": one-shot task succeeds", func(ctx context.Context) (bool, error) {
		runs, err := c.clients[via].ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: "probe-" + name, TaskId: resp.GetTask().GetId()})
		if err != nil {
			return false, err
		}
		for _, r := range runs.GetRuns() {
			if r.GetOutcome() == taskdv1.Outcome_OUTCOME_SUCCESS {
				return true, nil
			}
		}
		return false, errors.New("no SUCCESS run yet")
	})
	c.t.Logf("%s: a one-shot task scheduled through %s succeeded after %s", name, via, d.Round(100*time.Millisecond))
}

// restart restarts a node with docker restart (SIGTERM: it drains) and
// waits until it is RUNNING again with a new incarnation.
func (c *cluster) restart(ctx context.Context, node string) {
	c.t.Helper()
	before := c.incarnation(ctx, node)
	start := time.Now()
	c.docker(ctx, "restart", "-t", "45", c.container(ctx, node))
	c.poll(ctx, node+" RUNNING with a new incarnation", func(ctx context.Context) (bool, error) {
		resp, err := c.clients[node].ListNodes(ctx, &taskdv1.ListNodesRequest{})
		if err != nil {
			return false, err
		}
		for _, n := range resp.GetNodes() {
			if n.GetName() == node && n.GetState() == taskdv1.NodeState_NODE_STATE_RUNNING && n.GetIncarnation() != before {
				return true, nil
			}
		}
		return false, errors.New("not RUNNING anew")
	})
	c.wantLog(ctx, node, "draining on signal")
	c.t.Logf("docker restart %s: RUNNING again after %s", node, time.Since(start).Round(100*time.Millisecond))
}

func (c *cluster) incarnation(ctx context.Context, node string) string {
	c.t.Helper()
	var inc string
	c.poll(ctx, node+" incarnation", func(ctx context.Context) (bool, error) {
		resp, err := c.clients[node].ListNodes(ctx, &taskdv1.ListNodesRequest{})
		if err != nil {
			return false, err
		}
		for _, n := range resp.GetNodes() {
			if n.GetName() == node {
				inc = n.GetIncarnation()
				return true, nil
			}
		}
		return false, errors.New("not listed")
	})
	return inc
}

// check waits until every task has completed, then reads the run histories:
// every run number 1..periods committed exactly once, with SUCCESS; no run
// started on the partitioned node between its lease's end and the heal.
func (c *cluster) check(ctx context.Context, ids map[string][]string, parted string, partedAt, healedAt time.Time) {
	c.t.Helper()
	via := "taskd-1"
	settle := c.poll(ctx, "every task COMPLETED", func(ctx context.Context) (bool, error) {
		for id, tasks := range ids {
			for _, task := range tasks {
				resp, err := c.clients[via].GetTask(ctx, &taskdv1.GetTaskRequest{Identity: id, TaskId: task})
				if err != nil {
					return false, err
				}
				if st := resp.GetTask().GetState(); st != taskdv1.TaskState_TASK_STATE_COMPLETED {
					return false, fmt.Errorf("%s/%s %s, %d runs", id, task, st, resp.GetTask().GetRunCount())
				}
			}
		}
		return true, nil
	})
	c.t.Logf("all tasks COMPLETED %s after the last fault", settle.Round(100*time.Millisecond))

	fenceEnd := partedAt.Add(leaseTTL)
	var lost, doubles, fenced, uncommitted, tasks, committed int
	for id, list := range ids {
		for _, task := range list {
			tasks++
			rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
			resp, err := c.clients[via].ListRuns(rctx, &taskdv1.ListRunsRequest{Identity: id, TaskId: task})
			cancel()
			if err != nil {
				c.t.Fatalf("runs of %s/%s: %v", id, task, err)
			}
			byNumber := map[int64]int{}
			for _, r := range resp.GetRuns() {
				switch r.GetOutcome() {
				case taskdv1.Outcome_OUTCOME_SUCCESS:
					byNumber[r.GetRunNumber()]++
					committed++
				default:
					uncommitted++
				}
				if started := r.GetStartedAt().AsTime(); r.GetNode() == parted && started.After(fenceEnd) && started.Before(healedAt) {
					fenced++
					c.t.Errorf("%s/%s run %d started on partitioned %s at %s, after its lease ended (%s)",
						id, task, r.GetRunNumber(), parted, started.Format(time.StampMilli), fenceEnd.Format(time.StampMilli))
				}
			}
			for n := int64(1); n <= periods; n++ {
				switch byNumber[n] {
				case 0:
					lost++
					c.t.Errorf("%s/%s: run %d has no SUCCESS in the history", id, task, n)
				case 1:
				default:
					doubles++
					c.t.Errorf("%s/%s: run %d committed %d times", id, task, n, byNumber[n])
				}
			}
		}
	}
	c.t.Logf("FIGURE histories of %d tasks: %d SUCCESS runs, %d other entries (interrupted/dropped), lost %d, committed twice %d, started on the partitioned node after its lease %d",
		tasks, committed, uncommitted, lost, doubles, fenced)
}

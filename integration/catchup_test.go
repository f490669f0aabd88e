package integration

import (
	"fmt"
	"sort"
	"testing"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestPeriodicTaskAfterSIGKILLIsNotReplayed kills, with SIGKILL, the owner
// of three periodic tasks (every 1 s, one per misfire policy) and lets the
// other node take them over once the dead node's 5 s lease expires, so
// that several fire times pass while nobody runs them, all far less than
// the default --misfire-threshold (60 s) ago. It reads what happened from
// the run history alone (fire times and starts the nodes recorded, no
// clock of the test's). A run that started a period or more after its fire
// time is a catch-up run, one of several past fire times started together:
// SKIP starts at most one, FIRE_ONCE_NOW one, for the oldest missed, and
// FIRE_ALL replays every missed one, in order (contract §4.4: downtime is
// not replayed by the threshold). After that each task runs on its grid,
// every fire time at most once.
func TestPeriodicTaskAfterSIGKILLIsNotReplayed(t *testing.T) {
	t.Parallel()
	const iv = time.Second
	cl := newCluster(t, "/catchup/")
	opts := func(name string) nodeOptions { return cl.opts(name, "--lease-ttl", "5s") }
	a := startNode(t, opts("node-a"))
	b := startNode(t, opts("node-b"))
	ac, bc := a.Client(), b.Client()

	policies := []taskdv1.MisfirePolicy{
		taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED, // SKIP, the periodic default
		taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
		taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL,
	}
	ids := make([]string, len(policies))
	tasks := make([]string, len(policies))
	for i, p := range policies {
		ids[i] = fmt.Sprintf("catchup-%d", i)
		// Scheduled through node-a, which is RUNNING: node-a owns it.
		tasks[i] = schedule(t, ac, &taskdv1.TaskSpec{Identity: ids[i], Kind: "rec", Triggers: every(iv), Misfire: p}).GetId()
	}
	requireOwner(t, bc, ids, "node-a")
	eventually(t, waitLong, "two runs of each task on node-a", func() error {
		for i := range ids {
			if n := runsOn(t, ac, ids[i], tasks[i], "node-a"); n < 2 {
				return fmt.Errorf("task of %s ran %d times on node-a", ids[i], n)
			}
		}
		return nil
	})
	a.Kill()
	eventually(t, waitLong, "three runs of each task on node-b", func() error {
		for i := range ids {
			if n := runsOn(t, bc, ids[i], tasks[i], "node-b"); n < 3 {
				return fmt.Errorf("task of %s ran %d times on node-b", ids[i], n)
			}
		}
		return nil
	})

	for i, policy := range policies {
		t.Run(policy.String(), func(t *testing.T) {
			runs := mustListRuns(t, bc, ids[i], tasks[i])
			sort.Slice(runs, func(x, y int) bool { return runs[x].GetRunNumber() < runs[y].GetRunNumber() })
			var lastA time.Time // the newest fire time node-a started
			var onB []*taskdv1.Run
			seen := map[time.Time]bool{}
			for _, r := range runs {
				fire := r.GetFireTime().AsTime()
				switch {
				case r.GetNode() == "node-a":
					if fire.After(lastA) {
						lastA = fire
					}
				case r.GetRecovery():
					continue // node-a's interrupted fire time, run again
				default:
					onB = append(onB, r)
				}
				if seen[fire] && !r.GetRecovery() {
					t.Fatalf("fire time %v ran twice:%s", fire, describeRuns(runs))
				}
				seen[fire] = true
			}
			if lastA.IsZero() || len(onB) < 3 {
				t.Fatalf("history without node-a's runs or three of node-b's:%s", describeRuns(runs))
			}
			// The fire times node-a left that had come when node-b started
			// its first run.
			firstStart := onB[0].GetStartedAt().AsTime()
			missed := int(firstStart.Sub(lastA) / iv)
			if missed < 3 {
				t.Fatalf("the take-over found %d fire times past (node-a's last %v, node-b's first start %v): too few to show a burst", missed, lastA, firstStart)
			}
			// A run started a period or more after its fire time was one of
			// several past fire times started together: a catch-up run.
			caughtUp := 0
			for _, r := range onB {
				if r.GetStartedAt().AsTime().Sub(r.GetFireTime().AsTime()) >= iv {
					caughtUp++
				}
			}
			oldestMissed := lastA.Add(iv)
			from := 1 // from which run on node-b's runs are one period apart
			switch policy {
			case taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL:
				if caughtUp < 2 || !onB[0].GetFireTime().AsTime().Equal(oldestMissed) {
					t.Fatalf("FIRE_ALL: %d catch-up runs of the %d fire times missed, from %v: want them all replayed from %v:%s",
						caughtUp, missed, onB[0].GetFireTime().AsTime(), oldestMissed, describeRuns(runs))
				}
				from = 0 // every missed one, in order
			case taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW:
				if caughtUp != 1 || !onB[0].GetFireTime().AsTime().Equal(oldestMissed) {
					t.Fatalf("FIRE_ONCE_NOW: %d catch-up runs of the %d fire times missed, the first for %v: want one, for the oldest missed %v:%s",
						caughtUp, missed, onB[0].GetFireTime().AsTime(), oldestMissed, describeRuns(runs))
				}
				from = 2 // after the one run for them all, the next period after it
			default:
				if caughtUp > 1 {
					t.Fatalf("SKIP: %d catch-up runs of the %d fire times missed: a burst:%s", caughtUp, missed, describeRuns(runs))
				}
			}
			for k := max(from, 1); k < len(onB); k++ {
				prev, cur := onB[k-1].GetFireTime().AsTime(), onB[k].GetFireTime().AsTime()
				if cur.Sub(prev) != iv || cur.Sub(oldestMissed)%iv != 0 {
					t.Fatalf("node-b ran %v then %v: not the task's next period:%s", prev, cur, describeRuns(runs))
				}
			}
		})
	}
}

// runsOn counts the runs of a task's history that node started.
func runsOn(t *testing.T, c taskdv1.TaskServiceClient, identity, task, node string) int {
	t.Helper()
	runs, err := listRuns(c, identity, task)
	if err != nil {
		return 0 // the owner may be moving: asked again
	}
	n := 0
	for _, r := range runs {
		if r.GetNode() == node && !r.GetRecovery() {
			n++
		}
	}
	return n
}

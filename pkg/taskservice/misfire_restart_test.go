package taskservice_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestMisfirePoliciesAfterDowntime restarts the only node after it was
// down across ten fire times of a periodic task (interval 100ms) and
// checks what each policy does with the missed ones: SKIP runs none of
// them, FIRE_ONCE_NOW runs one (the oldest missed) at once, FIRE_ALL runs
// the newest --max-catch-up of them, in order. After that the task is back
// on its grid. It does so with a threshold shorter than the downtime
// (150ms) and with the default one (60s), which the downtime does not
// reach: downtime is caught up by the policy, not replayed by the
// threshold (takeover.go).
func TestMisfirePoliciesAfterDowntime(t *testing.T) {
	for _, tc := range []struct {
		threshold time.Duration
		policy    taskdv1.MisfirePolicy
	}{
		{150 * time.Millisecond, taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP},
		{150 * time.Millisecond, taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW},
		{150 * time.Millisecond, taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL},
		{time.Minute, taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP},
		{time.Minute, taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW},
		{time.Minute, taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL},
	} {
		policy := tc.policy
		t.Run(fmt.Sprintf("threshold %v/%v", tc.threshold, policy), func(t *testing.T) {
			mod := func(c *taskservice.Config) { c.MisfireThreshold = tc.threshold; c.MaxCatchUp = 3 }
			c := newCluster(t, []string{"a"}, mod)
			iv := 100 * time.Millisecond
			start := time.Now().Add(iv).Truncate(time.Millisecond)
			s := spec("m", "rec", every(start, iv, 0))
			s.Misfire = policy
			task := c.schedule("a", s)
			tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) >= 1 }, "a first run")
			var downAt, upAt time.Time
			var before int
			c.restartWith("a", func() {
				downAt = time.Now()
				before = len(c.rec.of(task.Id))
				waitPast(t, downAt.Add(10*iv)) // ten fire times pass while the node is down
			}, mod)
			upAt = c.nodes["a"].Node.DispatchStart()
			tst.Eventually(t, 10*time.Second, func() bool { return len(c.rec.of(task.Id)) >= before+5 }, "runs after the restart")
			after := c.rec.of(task.Id)[before:]
			lastBefore := c.rec.of(task.Id)[before-1].Fire
			f0 := after[0].Fire
			grid := func(from, to time.Time) int { // grid times in [from, to]
				n := 0
				for f := from; !f.After(to); f = f.Add(iv) {
					n++
				}
				return n
			}
			switch policy {
			case taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP:
				// Nothing missed runs: the first run is for a fire time after
				// the node came back.
				if !f0.After(upAt) {
					t.Fatalf("SKIP: first run after the restart serves %v, before the node came back at %v", f0, upAt)
				}
			case taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW:
				// One run for the oldest missed fire time, then on after now.
				if !f0.Equal(lastBefore.Add(iv)) || !after[1].Fire.After(upAt) {
					t.Fatalf("FIRE_ONCE_NOW: runs serve %v then %v; want the oldest missed %v, then one after %v",
						f0, after[1].Fire, lastBefore.Add(iv), upAt)
				}
			case taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL:
				// The newest --max-catch-up (3) of the fire times due when it
				// planned (between the restart and the first run's start)
				// run one by one; older ones are dropped.
				if !f0.After(lastBefore.Add(iv)) || grid(f0, upAt) > 3 || grid(f0, after[0].Start) < 3 {
					t.Fatalf("FIRE_ALL: first run serves %v (last before the stop %v, restart %v, start %v): not the 3rd newest due",
						f0, lastBefore, upAt, after[0].Start)
				}
				// Each next run serves the next fire time in line, unless
				// its plan (at or before its start) came so late, on a
				// loaded machine, that the next in line was no longer among
				// the newest 3 due: then the oldest of those, no later.
				for i := 1; i < 3; i++ {
					prev, cur := after[i-1].Fire, after[i].Fire
					next := prev.Add(iv)
					latest := start.Add(after[i].Start.Sub(start) / iv * iv) // the newest fire time due at its start
					if oldestOfNewest := latest.Add(-2 * iv); oldestOfNewest.After(next) {
						next = oldestOfNewest
					}
					if cur.Sub(prev) < iv || cur.After(next) {
						t.Fatalf("FIRE_ALL caught up %v then %v (started %v): not the next in line among the newest 3 due",
							prev, cur, after[i].Start)
					}
				}
			}
			// Every run serves a distinct fire time on the grid, in order.
			for i, r := range after {
				if r.Fire.Sub(start)%iv != 0 || (i > 0 && !r.Fire.After(after[i-1].Fire)) {
					t.Fatalf("run %d serves %v: off the grid or out of order", i, r.Fire)
				}
			}
			if got := getTask(t, c.nodes["a"], "m", task.Id); got.Misfires == 0 {
				t.Fatalf("misfires not counted on the task")
			}
		})
	}
}

// TestNewTaskWithAPastStartIsNotCaughtUp: a task scheduled with a start
// before the node's dispatch start is no take-over (nobody held it while
// those fire times passed): its five past fire times, all within the
// threshold, are late by the threshold's rule and each runs, in order,
// although they came before the node began dispatching.
func TestNewTaskWithAPastStartIsNotCaughtUp(t *testing.T) {
	h := newHarness(t, nil) // the default threshold, 60s
	iv := 100 * time.Millisecond
	start := h.node.Node.DispatchStart().Add(-6 * iv).Truncate(time.Millisecond)
	task := h.schedule(spec("past", "rec", every(start, iv, 5)))
	h.waitState("past", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	calls := h.rec.of(task.Id)
	if len(calls) != 5 {
		t.Fatalf("%d runs of the 5 fire times before the dispatch start, want each run: %+v", len(calls), calls)
	}
	for k, c := range calls {
		if !c.Fire.Equal(start.Add(time.Duration(k) * iv)) {
			t.Fatalf("run %d serves %v, want %v", k, c.Fire, start.Add(time.Duration(k)*iv))
		}
	}
}

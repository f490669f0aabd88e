package integration

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// taskRef names a task.
type taskRef struct{ identity, id string }

// TestFailoverAfterSIGKILL kills the owner of 30 identities with SIGKILL and
// checks that the placement leader hands them to the survivors once the
// dead node's lease expires (contract §3.1, §3.2, §3.4): every identity is
// mapped to a survivor, every pending one-shot completes exactly once,
// every periodic task goes on, a run number is only executed again under a
// newer fence after the kill (§1, §2.3) and the dead node leaves ListNodes.
func TestFailoverAfterSIGKILL(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, "/failover/")
	a := startNode(t, cl.opts("node-a"))
	b := startNode(t, cl.opts("node-b"))
	_ = startNode(t, cl.opts("node-c"))
	ac, bc := a.Client(), b.Client()

	const n = 30
	// Scheduled through A, which is RUNNING: A owns the identities.
	ids, periodic := periodicEach(t, ac, "failover", n, "slowrec", 300*time.Millisecond)
	var oneShots []taskRef
	for i, id := range ids {
		for k := range 2 {
			// Through B: stored, then handed to the owner A (contract §3.5).
			delay := time.Second + time.Duration(2*i+k)*2*time.Second/(2*n)
			task := schedule(t, bc, &taskdv1.TaskSpec{Identity: id, Kind: "rec", Triggers: onceAfter(delay)})
			oneShots = append(oneShots, taskRef{id, task.GetId()})
		}
	}
	requireOwner(t, bc, ids, "node-a")
	isOneShot := map[string]bool{}
	for _, r := range oneShots {
		isOneShot[r.id] = true
	}

	// Let A run some of them: periodic runs of most identities and at least
	// one one-shot.
	eventually(t, waitLong, "node-a runs tasks", func() error {
		idents, oneShotRuns := map[string]bool{}, 0
		for _, l := range cl.recLines() {
			if l.node != "node-a" {
				return fmt.Errorf("a run on %s before the kill: %s", l.node, l)
			}
			idents[l.identity] = true
			if isOneShot[l.task] {
				oneShotRuns++
			}
		}
		if len(idents) < n/2 || oneShotRuns == 0 {
			return fmt.Errorf("runs on node-a for %d identities, %d one-shot runs", len(idents), oneShotRuns)
		}
		return nil
	})
	killAt := time.Now()
	a.Kill()
	pending := 0
	for _, r := range oneShots {
		if task, err := getTask(bc, r.identity, r.id); err == nil && task.GetState() != taskdv1.TaskState_TASK_STATE_COMPLETED {
			pending++
		}
	}
	t.Logf("SIGKILL node-a with %d of %d one-shots not completed", pending, len(oneShots))

	// Within the lease TTL (2 s) and a few handoff periods (generous: 15 s)
	// every identity is mapped to a survivor.
	var split map[string]int
	eventually(t, 15*time.Second, "identities of node-a mapped to survivors", func() error {
		got, err := owners(bc, ids)
		if err != nil {
			return err
		}
		split = map[string]int{}
		for _, id := range ids {
			if got[id] != "node-b" && got[id] != "node-c" {
				return fmt.Errorf("identity %s mapped to %q", id, got[id])
			}
			split[got[id]]++
		}
		return nil
	})
	t.Logf("all %d identities remapped %s after the kill: %v", n, time.Since(killAt).Round(time.Millisecond), split)

	// The dead node's lease expired: it is no longer listed.
	nodes, err := listNodes(bc)
	if err != nil {
		t.Fatalf("ListNodes: %v", err)
	}
	if nd := findNode(nodes, "node-a"); nd != nil {
		t.Errorf("ListNodes still lists node-a after its identities moved: %v", nd)
	}

	// Every one-shot completes with exactly one committed SUCCESS.
	for _, r := range oneShots {
		task := waitTaskState(t, bc, r.identity, r.id, taskdv1.TaskState_TASK_STATE_COMPLETED)
		runs := mustListRuns(t, bc, r.identity, r.id)
		if task.GetLastRun().GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS || successes(runs) != 1 {
			t.Errorf("one-shot %s/%s: last run %v, %d SUCCESS entries, want exactly one%s",
				r.identity, r.id, task.GetLastRun(), successes(runs), describeRuns(runs))
		}
	}

	// Every periodic task keeps running on the survivors.
	eventually(t, waitLong, "periodic tasks run on the survivors", func() error {
		after := map[string]int{}
		for _, l := range cl.recLines() {
			if l.node != "node-a" && l.at.After(killAt) && l.task == periodic[l.identity] {
				after[l.identity]++
			}
		}
		for _, id := range ids {
			if after[id] < 2 {
				return fmt.Errorf("periodic task of %s ran %d times on the survivors", id, after[id])
			}
		}
		return nil
	})

	// Run numbers repeat only under a newer fence, after the kill, and the
	// earlier execution is not committed.
	lines := cl.recLines()
	tasks := byTask(lines)
	repeated := 0
	for _, id := range ids {
		repeated += checkRepeats(t, periodic[id], tasks[periodic[id]], mustListRuns(t, bc, id, periodic[id]), "node-a")
	}
	for _, r := range oneShots {
		repeated += checkRepeats(t, r.id, tasks[r.id], mustListRuns(t, bc, r.identity, r.id), "node-a")
	}
	t.Logf("%d run numbers executed again under a newer fence (recoveries of runs in flight at the kill)", repeated)

	// For the closing note: how long after the SIGKILL the dead node's
	// tasks ran on a survivor.
	first := map[string]time.Duration{}
	for _, l := range lines {
		if l.node == "node-a" || !l.at.After(killAt) {
			continue
		}
		if d, ok := first[l.identity]; !ok || l.at.Sub(killAt) < d {
			first[l.identity] = l.at.Sub(killAt)
		}
	}
	var firsts []time.Duration
	for _, d := range first {
		firsts = append(firsts, d)
	}
	slices.Sort(firsts)
	if len(firsts) > 0 {
		t.Logf("SIGKILL → first run on a survivor (lease-ttl 2s): first identity %s, median %s, last identity %s",
			firsts[0].Round(time.Millisecond), percentile(firsts, 50).Round(time.Millisecond),
			firsts[len(firsts)-1].Round(time.Millisecond))
	}
}

// TestSIGSTOPPastLeaseThenSIGCONT freezes the owner of 10 identities past
// its lease, lets the other node take them over, then resumes it: the
// frozen node's late commits fail their fence (contract §2.2, §2.4, §3.3), it
// starts no new run for the identities it lost, and it rejoins cleanly
// under the same incarnation and takes new identities.
func TestSIGSTOPPastLeaseThenSIGCONT(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, "/sigstop/")
	a := startNode(t, cl.opts("node-a"))
	b := startNode(t, cl.opts("node-b"))
	ac, bc := a.Client(), b.Client()

	const n = 10
	ids, tasks := periodicEach(t, ac, "frozen", n, "slowrec", 200*time.Millisecond)
	requireOwner(t, bc, ids, "node-a")
	cl.waitIdentitiesRan(t, "node-a", n, "every identity ran on node-a")
	ctx, cancel := rpcCtx()
	before, err := a.self(ctx)
	cancel()
	if err != nil || before == nil {
		t.Fatalf("ListNodes before SIGSTOP: %v, %v", before, err)
	}

	stopAt := time.Now()
	resume := a.freeze()
	tookOver := map[string]time.Time{} // when the move to B was first seen
	eventually(t, waitLong, "node-b takes over the identities of the frozen node", func() error {
		for _, id := range ids {
			if _, ok := tookOver[id]; ok {
				continue
			}
			got, err := getIdentity(bc, id)
			if err != nil {
				return err
			}
			if got.GetNode() == "node-b" {
				tookOver[id] = time.Now()
			}
		}
		if len(tookOver) < n {
			return fmt.Errorf("%d of %d identities mapped to node-b", len(tookOver), n)
		}
		ranOnB := map[string]bool{}
		for _, l := range cl.recLines() {
			if l.node == "node-b" {
				ranOnB[l.identity] = true
			}
		}
		for _, id := range ids {
			if !ranOnB[id] {
				return fmt.Errorf("identity %s has not run on node-b yet", id)
			}
		}
		nodes, err := listNodes(bc)
		if err != nil {
			return err
		}
		if findNode(nodes, "node-a") != nil {
			return errors.New("node-a is still listed")
		}
		return nil
	})
	t.Logf("SIGSTOP → all %d identities taken over and run on node-b: %s", n, time.Since(stopAt).Round(time.Millisecond))

	contAt := time.Now()
	resume()

	// A rejoins: registered again, RUNNING, with the same incarnation.
	eventually(t, waitLong, "node-a rejoins", func() error {
		nodes, err := listNodes(bc)
		if err != nil {
			return err
		}
		nd := findNode(nodes, "node-a")
		switch {
		case nd == nil:
			return errors.New("node-a not listed")
		case nd.GetState() != taskdv1.NodeState_NODE_STATE_RUNNING:
			return fmt.Errorf("node-a is %s", nd.GetState())
		case nd.GetIncarnation() != before.GetIncarnation():
			return fmt.Errorf("node-a has incarnation %s, want %s (the same process)", nd.GetIncarnation(), before.GetIncarnation())
		}
		return nil
	})
	t.Logf("SIGCONT → node-a RUNNING again: %s", time.Since(contAt).Round(time.Millisecond))

	// A new identity scheduled through A maps to A and runs there.
	fresh := schedule(t, ac, &taskdv1.TaskSpec{Identity: "frozen-new", Kind: "rec", Triggers: onceAfter(0)})
	requireOwner(t, bc, []string{"frozen-new"}, "node-a")
	waitTaskState(t, bc, "frozen-new", fresh.GetId(), taskdv1.TaskState_TASK_STATE_COMPLETED)
	// Give B a few more periods, so that anything A still had in flight at
	// SIGCONT has tried to commit.
	eventually(t, waitLong, "node-b keeps running the identities", func() error {
		k := map[string]int{}
		for _, l := range cl.recLines() {
			if l.node == "node-b" && l.at.After(contAt) {
				k[l.identity]++
			}
		}
		for _, id := range ids {
			if k[id] < 2 {
				return fmt.Errorf("identity %s ran %d times on node-b since SIGCONT", id, k[id])
			}
		}
		return nil
	})
	for _, l := range cl.recLines() {
		if l.identity == "frozen-new" && l.node != "node-a" {
			t.Errorf("the new identity ran on %s: %s", l.node, l)
		}
	}

	// After SIGCONT node-a calls no handler under an epoch it held before
	// SIGSTOP (contract §2.4): the moment it runs again its last renewal is
	// stale, so nothing may start until it has renewed its lease or
	// re-adopted under new epochs — not even a run whose start it had
	// written before it froze. Here it lost every identity it held, so its
	// only handler calls after SIGCONT are those of the new identity, under
	// an epoch newer than any it held before.
	all := cl.recLines()
	maxOldEpoch := int64(0)
	for _, l := range all {
		if l.node == "node-a" && l.at.Before(contAt) && l.fence.epoch > maxOldEpoch {
			maxOldEpoch = l.fence.epoch
		}
	}
	for _, l := range all {
		if l.node != "node-a" || !l.at.After(contAt) {
			continue
		}
		if l.identity != "frozen-new" || l.fence.epoch <= maxOldEpoch {
			t.Errorf("node-a called a handler after SIGCONT (%s) under a stale epoch (newest before SIGSTOP: %d): %s",
				contAt.Format("15:04:05.000"), maxOldEpoch, l)
		}
	}
	lines := byTask(all)
	repeated := 0
	for _, id := range ids {
		task := tasks[id]
		// No committed result of A ends after B took the identity over:
		// its late commits failed the fence.
		runs := mustListRuns(t, bc, id, task)
		for _, r := range runs {
			if r.GetNode() != "node-a" || r.GetOutcome() == taskdv1.Outcome_OUTCOME_INTERRUPTED ||
				r.GetOutcome() == taskdv1.Outcome_OUTCOME_DROPPED {
				continue
			}
			if !r.GetEndedAt().AsTime().Before(tookOver[id]) || !r.GetStartedAt().AsTime().Before(stopAt.Add(100*time.Millisecond)) {
				t.Errorf("identity %s: node-a committed run %d (started %s, ended %s) although node-b took the identity over at %s (SIGSTOP %s)%s",
					id, r.GetRunNumber(), r.GetStartedAt().AsTime().Format("15:04:05.000"), r.GetEndedAt().AsTime().Format("15:04:05.000"),
					tookOver[id].Format("15:04:05.000"), stopAt.Format("15:04:05.000"), describeRuns(runs))
			}
		}
		repeated += checkRepeats(t, task, lines[task], runs, "node-a")
	}
	t.Logf("%d run numbers executed again under a newer fence (recoveries of runs in flight at SIGSTOP)", repeated)
}

// TestDrainMovesIdentities drains a node through taskctl on the other node
// (contract §3.1, §3.3): the drained process exits 0 within --drain-timeout, its
// identities are all mapped to the other node when it exits, every pending
// one-shot runs exactly once, on time, and periodic tasks go on.
func TestDrainMovesIdentities(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, "/drain/")
	a := startNode(t, cl.opts("node-a"))
	b := startNode(t, cl.opts("node-b"))
	ac, bc := a.Client(), b.Client()

	const n = 10
	var ids []string
	periodic := map[string]string{}
	var oneShots []taskRef
	for i := range n {
		id := fmt.Sprintf("drained-%02d", i)
		ids = append(ids, id)
		periodic[id] = schedule(t, ac, &taskdv1.TaskSpec{Identity: id, Kind: "rec", Triggers: every(300 * time.Millisecond)}).GetId()
		delay := time.Second + time.Duration(i)*time.Second/n
		task := schedule(t, ac, &taskdv1.TaskSpec{Identity: id, Kind: "rec", Triggers: onceAfter(delay)})
		oneShots = append(oneShots, taskRef{id, task.GetId()})
	}
	requireOwner(t, bc, ids, "node-a")
	cl.waitIdentitiesRan(t, "node-a", n, "periodic tasks run on node-a")

	drainAt := time.Now()
	taskctl(t, b.listen, "drain", "node-a").expect(t, "taskctl drain node-a", 0, "node-a")
	code, ok := a.waitExit(drainTimeout + 10*time.Second)
	if !ok {
		t.Fatalf("node-a still running %s after the drain request", drainTimeout+10*time.Second)
	}
	if code != 0 {
		t.Errorf("node-a exited with code %d after draining, want 0", code)
	}
	t.Logf("drain request → node-a exited: %s", time.Since(drainAt).Round(time.Millisecond))
	a.closeClient()

	// Draining moved every identity before the node stopped.
	requireOwner(t, bc, ids, "node-b")
	nodes, err := listNodes(bc)
	if err != nil {
		t.Fatalf("ListNodes: %v", err)
	}
	if nd := findNode(nodes, "node-a"); nd != nil {
		t.Errorf("ListNodes still lists the drained node: %v", nd)
	}

	// Every one-shot ran exactly once, on time.
	var lines map[string][]recLine
	var late []time.Duration
	for _, r := range oneShots {
		waitTaskState(t, bc, r.identity, r.id, taskdv1.TaskState_TASK_STATE_COMPLETED)
		runs := mustListRuns(t, bc, r.identity, r.id)
		if len(runs) != 1 || runs[0].GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS {
			t.Errorf("one-shot %s/%s: want exactly one SUCCESS run%s", r.identity, r.id, describeRuns(runs))
			continue
		}
		late = append(late, runs[0].GetStartedAt().AsTime().Sub(runs[0].GetFireTime().AsTime()))
	}
	lines = byTask(cl.recLines())
	for _, r := range oneShots {
		if k := len(lines[r.id]); k != 1 {
			t.Errorf("one-shot %s/%s executed %d times, want once: %v", r.identity, r.id, k, lines[r.id])
			continue
		}
		// The handler's fence is the one the history shows (so that the
		// fence comparisons of the other tests mean something).
		if runs := mustListRuns(t, bc, r.identity, r.id); len(runs) == 1 && runs[0].GetFence() != lines[r.id][0].fence.String() {
			t.Errorf("one-shot %s/%s: the handler saw fence %s, the history shows %q", r.identity, r.id,
				lines[r.id][0].fence, runs[0].GetFence())
		}
	}
	slices.Sort(late)
	if len(late) > 0 {
		t.Logf("one-shot lateness across the drain: p50 %s, max %s", percentile(late, 50).Round(time.Millisecond),
			late[len(late)-1].Round(time.Millisecond))
		if late[len(late)-1] > 3*time.Second {
			t.Errorf("a one-shot started %s after its fire time across the drain; want at most 3s", late[len(late)-1])
		}
	}

	// Periodic tasks go on on B, each run number executed once (a drain
	// moves an identity only when no run of it is in flight).
	eventually(t, waitLong, "periodic tasks run on node-b", func() error {
		k := map[string]int{}
		for _, l := range cl.recLines() {
			if l.node == "node-b" && l.at.After(drainAt) && l.task == periodic[l.identity] {
				k[l.identity]++
			}
		}
		for _, id := range ids {
			if k[id] < 2 {
				return fmt.Errorf("periodic task of %s ran %d times on node-b", id, k[id])
			}
		}
		return nil
	})
	lines = byTask(cl.recLines())
	for _, id := range ids {
		checkRepeats(t, periodic[id], lines[periodic[id]], mustListRuns(t, bc, id, periodic[id]))
	}
}

// TestRejoinedNodeTakesOverADeadNode checks that a node that lost its lease
// (frozen past it with SIGSTOP) and rejoined under the same incarnation is
// a full member again: when the other node then dies, the rejoined node
// becomes the placement leader and takes the dead node's identities (contract
// §3.1). The other node starts first, so it is the placement leader while
// the first one is frozen.
func TestRejoinedNodeTakesOverADeadNode(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, "/rejoin/")
	b := startNode(t, cl.opts("node-b")) // the placement leader
	a := startNode(t, cl.opts("node-a"))
	ac, bc := a.Client(), b.Client()

	const n = 5
	ids, _ := periodicEach(t, bc, "orphan", n, "rec", 200*time.Millisecond)
	requireOwner(t, ac, ids, "node-b")

	resume := a.freeze()
	eventually(t, waitLong, "the frozen node's lease expires", func() error {
		nodes, err := listNodes(bc)
		if err != nil {
			return err
		}
		if findNode(nodes, "node-a") != nil {
			return errors.New("node-a is still listed")
		}
		return nil
	})
	resume()
	eventually(t, waitLong, "node-a rejoins", func() error {
		nodes, err := listNodes(bc)
		if err != nil {
			return err
		}
		if nd := findNode(nodes, "node-a"); nd == nil || nd.GetState() != taskdv1.NodeState_NODE_STATE_RUNNING {
			return fmt.Errorf("node-a is %v", nd)
		}
		return nil
	})

	killAt := time.Now()
	b.Kill()
	eventually(t, 15*time.Second, "the dead node's identities mapped to the rejoined node", func() error {
		got, err := owners(ac, ids)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if got[id] != "node-a" {
				return fmt.Errorf("identity %s mapped to %q", id, got[id])
			}
		}
		return nil
	})
	eventually(t, waitLong, "the dead node's identities run on the rejoined node", func() error {
		ran := map[string]bool{}
		for _, l := range cl.recLines() {
			if l.node == "node-a" && l.at.After(killAt) {
				ran[l.identity] = true
			}
		}
		if len(ran) < n {
			return fmt.Errorf("%d of %d identities ran on node-a since the kill", len(ran), n)
		}
		return nil
	})
}

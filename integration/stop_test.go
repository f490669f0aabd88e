package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file stops a lone node (no other RUNNING node to hand identities
// to) with a run in flight (contract §3.3, docs/operations.md "Stopping a
// node"): the stop waits for that run only, not for --drain-timeout, and a
// clean stop exits 0.

// stopDrainTimeout is far longer than any wait of these tests: a stop that
// waits for it fails them.
const stopDrainTimeout = 60 * time.Second

// loneNode returns the options of a node on the cluster's etcd whose "hold"
// kind touches started-<task> in dir, then sleeps for as many seconds as its
// payload says, and whose drain timeout is stopDrainTimeout.
func loneNode(cl *cluster, name, dir string) nodeOptions {
	hold := fmt.Sprintf(`touch %s/started-$TASKD_TASK_ID; sleep "$(cat)"; echo held`, shellQuote(dir))
	return nodeOptions{
		name:    name,
		dataDir: filepath.Join(cl.dir, "data-"+name),
		etcd:    cl.etcd.URL,
		extra: []string{"--prefix", cl.prefix, "--exec", "hold=" + hold,
			"--drain-timeout", stopDrainTimeout.String()},
	}
}

// holdInFlight schedules a "hold" run of secs seconds on identity and waits
// until its command has started; it returns the task id.
func holdInFlight(t *testing.T, p *taskd, dir, identity string, secs float64) string {
	t.Helper()
	task := schedule(t, p.Client(), &taskdv1.TaskSpec{Identity: identity, Kind: "hold",
		Payload: []byte(strconv.FormatFloat(secs, 'f', 1, 64)), Triggers: onceAfter(0)})
	started := filepath.Join(dir, "started-"+task.GetId())
	eventually(t, waitLong, "the hold run is in flight", func() error {
		_, err := os.Stat(started)
		return err
	})
	return task.GetId()
}

// wantOneSuccess checks that the task ran exactly once, successfully: its
// run was waited for, not interrupted by the stop.
func wantOneSuccess(t *testing.T, c taskdv1.TaskServiceClient, identity, id string) {
	t.Helper()
	waitTaskState(t, c, identity, id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	runs := mustListRuns(t, c, identity, id)
	if len(runs) != 1 || runs[0].GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Errorf("task %s/%s: want exactly one SUCCESS run (the one in flight at the stop)%s", identity, id, describeRuns(runs))
	}
}

// idleIdentity gives the node an identity with nothing running: a task due
// in an hour. A drain finds at once that no node can take it.
func idleIdentity(t *testing.T, p *taskd) {
	t.Helper()
	schedule(t, p.Client(), &taskdv1.TaskSpec{Identity: "idle", Kind: "hold", Triggers: onceAfter(time.Hour)})
}

// TestLoneStopWaitsOnlyForTheRunInFlight stops the only node, which owns an
// idle identity and one with a run in flight that ends about three seconds
// later (longer than the 2s lease TTL), under a drain timeout of a minute:
// the process exits 0 well within the minute (Term waits far less), and the
// run was committed SUCCESS before it exited (the next start shows it). A
// stop that let the lease lapse while it waited for the run exited 1
// ("publish node ...: the record is no longer under this node's lease").
func TestLoneStopWaitsOnlyForTheRunInFlight(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, "/lone-stop/")
	dir := t.TempDir()
	p := startNode(t, loneNode(cl, "lone", dir))
	idleIdentity(t, p)
	id := holdInFlight(t, p, dir, "held", 3)

	if waitExitTimeout >= stopDrainTimeout {
		t.Fatalf("the exit deadline %s must be shorter than the drain timeout %s", waitExitTimeout, stopDrainTimeout)
	}
	if code := p.Term(); code != 0 {
		t.Fatalf("the lone node exited %d after SIGTERM, want 0", code)
	}
	if !p.log.Contains("no other RUNNING node") {
		t.Errorf("the drain did not find that no node could take the identities")
	}
	again := startNode(t, loneNode(cl, "lone", dir))
	wantOneSuccess(t, again.Client(), "held", id)
}

// TestLoneStopsAlwaysExitZero stops and starts the same lone node ten times,
// each time with an idle identity and a run in flight of 0 to 2.7 seconds,
// the longer ones outlasting the lease TTL (2s in these tests): every stop
// exits 0 and every run in flight is waited for and committed SUCCESS.
func TestLoneStopsAlwaysExitZero(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, "/lone-stops/")
	dir := t.TempDir()
	const stops = 10
	var last string
	for i := range stops {
		p := startNode(t, loneNode(cl, "lone", dir))
		if last == "" {
			idleIdentity(t, p)
		} else {
			wantOneSuccess(t, p.Client(), "held", last)
		}
		last = holdInFlight(t, p, dir, "held", 0.3*float64(i))
		if code := p.Term(); code != 0 {
			t.Fatalf("stop %d of %d (a run of %.1fs in flight) exited %d, want 0", i+1, stops, 0.3*float64(i), code)
		}
	}
	p := startNode(t, loneNode(cl, "lone", dir))
	wantOneSuccess(t, p.Client(), "held", last)
}

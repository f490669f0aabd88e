package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file tests, with real taskd processes, what a node says about runs
// of a kind that nothing on it serves (docs/workers.md, "Waiting for a
// worker"), and the --kinds declaration.

// Log messages of the waits (pkg/taskservice/unserved.go).
const (
	logUnserved = "no handler and no connected worker serves the kind"
	logDeclared = "runs of a declared kind wait for its first worker"
	logServed   = "runs of the kind no longer wait for want of a worker"
)

// logCount is how many lines of p's output hold every one of parts.
func logCount(p *taskd, parts ...string) int {
	n := 0
	for line := range strings.SplitSeq(p.log.String(), "\n") {
		if !slices.ContainsFunc(parts, func(s string) bool { return !strings.Contains(line, s) }) {
			n++
		}
	}
	return n
}

// waitingTask waits until the owner p shows the task waiting and returns it.
func waitingTask(t *testing.T, p *taskd, identity, id string) *taskdv1.Task {
	t.Helper()
	var task *taskdv1.Task
	eventually(t, waitLong, "the task is shown waiting", func() error {
		got, err := getTask(p.Client(), identity, id)
		if err != nil {
			return err
		}
		if got.GetWaiting() == "" {
			return fmt.Errorf("state %s, not waiting", got.GetState())
		}
		task = got
		return nil
	})
	return task
}

// The reported case: a node ran a periodic task of kind "count" with an
// --exec handler, was killed during a run, and was started again with
// another --exec and none for "count". The interrupted run is settled at
// once (INTERRUPTED, not left RUNNING), and the fire time's recovery run
// waits, visibly: the task is not RUNNING, GetTask's reason names the kind
// and the node, taskctl get prints it and taskctl list marks it,
// taskd_runs_waiting_unserved{kind="count"} is 1, and the process logged
// one line. A remote worker of the kind that connects runs it, and the
// process logs that the wait ended. Before, the task sat in RUNNING, its
// marker waiting for a worker, with nothing said.
func TestRunOfAKindNoLongerServedWaitsVisibly(t *testing.T) {
	cl := newCluster(t, "/unserved/")
	started := filepath.Join(cl.dir, "started")
	opts := cl.opts("n1")
	first := opts
	first.extra = append([]string{"--exec", "count=touch " + shellQuote(started) + "; sleep 60"}, opts.extra...)
	p := startNode(t, first)
	task := schedule(t, p.Client(), &taskdv1.TaskSpec{Identity: "alice", Kind: "count", Triggers: every(2 * time.Second), Backoff: fastBackoff})
	eventually(t, waitLong, "the run is in its handler", func() error {
		_, err := os.Stat(started)
		return err
	})
	p.Kill()

	second := opts
	second.extra = []string{"--prefix", cl.prefix, "--exec", "other=true"}
	p = startNode(t, second)
	got := waitingTask(t, p, "alice", task.GetId())
	want := `no handler or connected worker for kind "count" on node n1; waiting since `
	if got.GetState() == taskdv1.TaskState_TASK_STATE_RUNNING || got.GetWaiting() != "worker" || !strings.HasPrefix(got.GetWaitingReason(), want) {
		t.Fatalf("after the restart: state %s, waiting %q, reason %q; want not RUNNING, reason %q…",
			got.GetState(), got.GetWaiting(), got.GetWaitingReason(), want)
	}
	runs := mustListRuns(t, p.Client(), "alice", task.GetId())
	if len(runs) != 1 || runs[0].GetOutcome() != taskdv1.Outcome_OUTCOME_INTERRUPTED {
		t.Fatalf("history: %s; want the killed run INTERRUPTED", describeRuns(runs))
	}
	m := scrape(t, p.httpAddr)
	wantValue(t, m, 1, "taskd_runs_waiting_unserved", "kind", "count")
	wantValue(t, m, 1, "taskd_runs_waiting_for_worker", "kind", "count")
	if n := logCount(p, "[WARN]", logUnserved, "kind=count"); n != 1 {
		t.Fatalf("%d WARN lines %q for kind count; want 1", n, logUnserved)
	}
	taskctl(t, p.listen, "get", "--identity", "alice", task.GetId()).expect(t, "taskctl get", 0, "Waiting:", want)
	taskctl(t, p.listen, "list", "--identity", "alice").expect(t, "taskctl list", 0, "/WAITING")

	w := startWorker(t, "w1", p.listen)
	eventually(t, waitLong, "the worker runs the waiting run", func() error {
		if n := len(w.lines("start alice " + task.GetId() + " ")); n == 0 {
			return fmt.Errorf("no run on the worker")
		}
		return nil
	})
	eventually(t, waitLong, "the process logs that the wait ended", func() error {
		if n := logCount(p, logServed, "kind=count"); n != 1 {
			return fmt.Errorf("%d lines %q", n, logServed)
		}
		return nil
	})
	if v := value(scrape(t, p.httpAddr), "taskd_runs_waiting_unserved", "kind", "count"); v > 0 {
		t.Fatalf("taskd_runs_waiting_unserved{kind=count} = %v with the worker connected", v)
	}
}

// --kinds declares kinds that remote workers will serve: the node
// advertises them, so scheduling accepts them before any worker connects
// (through another node too), while a kind neither handled nor declared is
// still refused with INVALID_ARGUMENT naming it. The run waits, visibly
// (reason, metric, one INFO line), and runs once, as run 1, when a worker
// of the kind connects. Before, scheduling the kind was refused until a
// worker had connected.
func TestDeclaredKindsAcceptTasksBeforeTheirWorker(t *testing.T) {
	cl := newCluster(t, "/declared/")
	opts := cl.opts("n1", "--kinds", "count, work")
	p := startNode(t, opts)
	other := startNode(t, cl.opts("n2"))

	nodes, err := listNodes(other.Client())
	if err != nil {
		t.Fatal(err)
	}
	if n1 := findNode(nodes, "n1"); n1 == nil || !slices.Contains(n1.GetKinds(), "count") || !slices.Contains(n1.GetKinds(), "work") {
		t.Fatalf("n1 as listed: %v; want the declared kinds advertised", n1)
	}
	ctx, cancel := rpcCtx()
	defer cancel()
	_, err = other.Client().ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{
		Identity: "bob", Kind: "nope", Scope: taskdv1.Scope_SCOPE_IDENTITY, Triggers: onceAfter(0)}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("a kind neither handled nor declared: %v; want INVALID_ARGUMENT naming it", err)
	}

	// Scheduled through n2, which neither handles nor declares the kind;
	// the identity is then moved to n1, whose wait this test reads.
	task := schedule(t, other.Client(), &taskdv1.TaskSpec{Identity: "bob", Kind: "count", Triggers: onceAfter(0), Backoff: fastBackoff})
	if owner, err := getIdentity(p.Client(), "bob"); err != nil {
		t.Fatal(err)
	} else if owner.GetNode() != "n1" {
		taskctl(t, p.listen, "move", "--identity", "bob", "--to", "n1").expect(t, "move bob to n1", 0)
	}
	got := waitingTask(t, p, "bob", task.GetId())
	want := `no worker of kind "count" (declared by --kinds) has connected to node n1; waiting since `
	if got.GetState() != taskdv1.TaskState_TASK_STATE_SCHEDULED || !strings.HasPrefix(got.GetWaitingReason(), want) || got.GetRunCount() != 0 {
		t.Fatalf("waiting: state %s, reason %q, runs %d; want SCHEDULED, reason %q…, no run",
			got.GetState(), got.GetWaitingReason(), got.GetRunCount(), want)
	}
	m := scrape(t, p.httpAddr)
	wantValue(t, m, 1, "taskd_runs_waiting_unserved", "kind", "count")
	wantValue(t, m, 0, "taskd_runs_waiting_unserved", "kind", "work")
	if n := logCount(p, "[INFO]", logDeclared, "kind=count"); n != 1 {
		t.Fatalf("%d INFO lines %q for kind count; want 1", n, logDeclared)
	}

	w := startWorker(t, "w1", p.listen, other.listen)
	done := waitTaskState(t, p.Client(), "bob", task.GetId(), taskdv1.TaskState_TASK_STATE_COMPLETED)
	runs := mustListRuns(t, p.Client(), "bob", task.GetId())
	if len(runs) != 1 || runs[0].GetRunNumber() != 1 || runs[0].GetAttempt() != 1 || runs[0].GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Fatalf("after the worker came (%s): %s", done.GetState(), describeRuns(runs))
	}
	if n := len(w.lines("start bob " + task.GetId() + " ")); n != 1 {
		t.Fatalf("the worker ran the task %d times; want once", n)
	}
	eventually(t, waitLong, "the process logs that the wait ended", func() error {
		if n := logCount(p, logServed, "kind=count"); n != 1 {
			return fmt.Errorf("%d lines %q", n, logServed)
		}
		return nil
	})
}

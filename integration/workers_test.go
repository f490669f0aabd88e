package integration

import (
	"bufio"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// worker is one testworker process: a remote worker serving every node of
// the cluster it discovers from its targets.
type worker struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdout *logBuffer // its report lines
	stderr *logBuffer // its log
	done   chan struct{}
}

func startWorker(t *testing.T, name string, targets ...string) *worker {
	t.Helper()
	w := &worker{t: t, name: name, stdout: &logBuffer{}, stderr: &logBuffer{}, done: make(chan struct{})}
	w.cmd = exec.Command(workerBin, "--name", name, "--target", strings.Join(targets, ","), "--concurrency", "8")
	w.cmd.Env = childEnv()
	w.cmd.Stdout, w.cmd.Stderr = w.stdout, w.stderr
	w.cmd.WaitDelay = 5 * time.Second
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start worker %s: %v", name, err)
	}
	go func() {
		_ = w.cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		w.kill()
		if t.Failed() {
			t.Logf("worker %s stdout:\n%s\nstderr:\n%s", name, w.stdout, w.stderr)
		}
	})
	return w
}

func (w *worker) kill() {
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
}

// serving waits until the worker has a stream open to n nodes.
func (w *worker) serving(n int) {
	w.t.Helper()
	eventually(w.t, waitLong, fmt.Sprintf("worker %s serves %d nodes", w.name, n), func() error {
		if got := strings.Count(w.stderr.String(), "serving node"); got < n {
			return fmt.Errorf("serving %d", got)
		}
		return nil
	})
}

// lines returns the worker's report lines that start with prefix.
func (w *worker) lines(prefix string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(w.stdout.String()))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			out = append(out, sc.Text())
		}
	}
	return out
}

func workerSpec(identity, kind string) *taskdv1.TaskSpec {
	return &taskdv1.TaskSpec{Identity: identity, Kind: kind, Scope: taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: onceAfter(0), Backoff: fastBackoff}
}

// A worker killed (SIGKILL) in the middle of a run leaves the run to the
// node, which retries it, with a new run number, on the other worker.
func TestWorkerKilledMidRunIsRetriedOnAnother(t *testing.T) {
	c := newCluster(t, "/workers-kill/")
	n1 := startNode(t, c.opts("n1"))
	w1, w2 := startWorker(t, "w1", n1.listen), startWorker(t, "w2", n1.listen)
	w1.serving(1)
	w2.serving(1)
	task := schedule(t, n1.Client(), workerSpec("kill-me", "hold"))
	first := fmt.Sprintf("start kill-me %s 1 1 ", task.GetId())
	var victim, survivor *worker
	eventually(t, waitLong, "a worker starts the run", func() error {
		switch {
		case len(w1.lines(first)) == 1:
			victim, survivor = w1, w2
		case len(w2.lines(first)) == 1:
			victim, survivor = w2, w1
		default:
			return fmt.Errorf("no start yet")
		}
		return nil
	})
	victim.kill()
	done := waitTaskState(t, n1.Client(), "kill-me", task.GetId(), taskdv1.TaskState_TASK_STATE_COMPLETED)
	runs := mustListRuns(t, n1.Client(), "kill-me", task.GetId())
	if len(runs) != 2 || runs[1].GetOutcome() != taskdv1.Outcome_OUTCOME_ERROR || !strings.Contains(runs[1].GetMessage(), "went away") ||
		runs[0].GetRunNumber() != 2 || runs[0].GetAttempt() != 2 || runs[0].GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Fatalf("task %s, runs %v", done.GetState(), runs)
	}
	if got := survivor.lines(fmt.Sprintf("start kill-me %s 2 2 ", task.GetId())); len(got) != 1 {
		t.Fatalf("the survivor ran the retry %d times", len(got))
	}
}

// A worker whose node loses the identity mid-run (the node is stopped past
// its lease, and the other node takes the identity and runs the fire time
// again) is told, once the node is back, that its outcome was refused; the
// task completes once, by the run the new owner dispatched.
func TestWorkerOutcomeRefusedWhenTheNodeLostTheIdentity(t *testing.T) {
	c := newCluster(t, "/workers-fence/")
	n1 := startNode(t, c.opts("n1"))
	n2 := startNode(t, c.opts("n2"))
	w := startWorker(t, "w", n1.listen)
	w.serving(2)
	task := schedule(t, n1.Client(), workerSpec("fenced", "hold"))
	first := fmt.Sprintf("start fenced %s 1 1 ", task.GetId())
	eventually(t, waitLong, "the worker starts the run", func() error {
		if len(w.lines(first)) == 0 {
			return fmt.Errorf("no start yet")
		}
		return nil
	})
	line := w.lines(first)[0]
	ownerName := line[strings.LastIndex(line, " ")+1:]
	owner, other := n1, n2
	if ownerName == "n2" {
		owner, other = n2, n1
	}
	owner.Signal(syscall.SIGSTOP) // past its 2 s lease: the other node takes the identity
	eventually(t, waitLong, "the other node owns the identity", func() error {
		id, err := getIdentity(other.Client(), "fenced")
		if err != nil {
			return err
		}
		if id.GetNode() != other.opts.name {
			return fmt.Errorf("owned by %s", id.GetNode())
		}
		return nil
	})
	done := waitTaskState(t, other.Client(), "fenced", task.GetId(), taskdv1.TaskState_TASK_STATE_COMPLETED)
	owner.Signal(syscall.SIGCONT)
	eventually(t, waitLong, "the worker is told its outcome for the lost run was refused", func() error {
		for _, l := range w.lines("ack " + ownerName + " ") {
			if strings.Contains(l, " refused ") {
				return nil
			}
		}
		return fmt.Errorf("acks from %s: %v", ownerName, w.lines("ack "+ownerName+" "))
	})
	runs := mustListRuns(t, other.Client(), "fenced", task.GetId())
	if successes(runs) != 1 || done.GetLastRun().GetNode() != other.opts.name {
		t.Fatalf("runs %v, last run on %s", runs, done.GetLastRun().GetNode())
	}
	for _, l := range w.lines("ack " + ownerName + " ") {
		if strings.Contains(l, " accepted ") {
			t.Fatalf("an outcome was accepted by the node that lost the identity: %s", l)
		}
	}
}

// Two workers serving three nodes under load, one of them killed and
// replaced midway: every task runs to completion, and no run is executed
// twice under the same run number and fence (a re-execution is visible).
func TestTwoWorkersThreeNodesUnderLoad(t *testing.T) {
	c := newCluster(t, "/workers-load/")
	var nodes []*taskd
	var addrs []string
	for _, name := range []string{"n1", "n2", "n3"} {
		n := startNode(t, c.opts(name))
		nodes = append(nodes, n)
		addrs = append(addrs, n.listen)
	}
	w1, w2 := startWorker(t, "w1", addrs...), startWorker(t, "w2", addrs...)
	w1.serving(3)
	w2.serving(3)
	const identities, perIdentity = 60, 5
	var specs []*taskdv1.TaskSpec
	for i := range identities {
		for range perIdentity {
			specs = append(specs, workerSpec(fmt.Sprintf("load-%02d", i), "work"))
		}
	}
	var tasks []*taskdv1.Task
	for i := 0; i < len(specs); i += 100 {
		ctx, cancel := rpcCtx()
		resp, err := nodes[i/100%3].Client().ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: specs[i:min(i+100, len(specs))]})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, resp.GetTasks()...)
	}
	// Kill one worker once it has started some runs; a third takes its place.
	eventually(t, waitLong, "w1 runs some tasks", func() error {
		if len(w1.lines("start ")) < 20 {
			return fmt.Errorf("%d starts", len(w1.lines("start ")))
		}
		return nil
	})
	w1.kill()
	w3 := startWorker(t, "w3", addrs...)
	for _, task := range tasks {
		waitTaskState(t, nodes[0].Client(), task.GetSpec().GetIdentity(), task.GetId(), taskdv1.TaskState_TASK_STATE_COMPLETED)
	}
	seen := map[string]string{}
	for _, w := range []*worker{w1, w2, w3} {
		for _, l := range w.lines("start ") {
			f := strings.Fields(l) // start identity task run attempt fence node
			key := strings.Join([]string{f[2], f[3], f[5]}, " ")
			if prev, dup := seen[key]; dup {
				t.Fatalf("task %s ran twice under run %s and fence %s: %q and %q", f[2], f[3], f[5], prev, l)
			}
			seen[key] = w.name + ": " + l
		}
	}
	reruns := 0
	for _, task := range tasks {
		runs := mustListRuns(t, nodes[0].Client(), task.GetSpec().GetIdentity(), task.GetId())
		if successes(runs) != 1 {
			t.Fatalf("task %s: runs %v", task.GetId(), runs)
		}
		reruns += len(runs) - 1
	}
	if len(w2.lines("start ")) == 0 || len(w3.lines("start ")) == 0 {
		t.Fatal("a live worker ran nothing")
	}
	if reruns == 0 {
		t.Fatal("the kill hit no run in flight: the test proved nothing about re-runs")
	}
	t.Logf("%d tasks, %d starts in all, %d visible re-runs after the kill", len(tasks), len(seen), reruns)
}

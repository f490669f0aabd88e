package integration

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// debianPython is the Python the worker example runs on: Debian's, whose
// python3-grpcio and python3-protobuf match the generated code in python/.
const debianPython = "/usr/bin/python3"

// requirePython skips the test unless debianPython can import grpc and
// google.protobuf.
func requirePython(t *testing.T) {
	t.Helper()
	cmd := exec.Command(debianPython, "-c", "import grpc, google.protobuf")
	cmd.Env = pythonEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		why := err.Error()
		if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); lines[len(lines)-1] != "" {
			why += ": " + lines[len(lines)-1]
		}
		skipUnlessRequired(t, "python", "%s cannot import grpc and google.protobuf (%s); install the Debian packages: apt-get install -y python3-grpcio python3-protobuf",
			debianPython, why)
	}
}

// pythonEnv is the environment of debianPython: the test's, without the
// TASKD_*, TASKCTL_* and PYTHON* variables (a PYTHONPATH or PYTHONHOME meant
// for another Python would change what it imports), and unbuffered.
func pythonEnv() []string {
	var env []string
	for _, kv := range childEnv() {
		if !strings.HasPrefix(kv, "PYTHON") {
			env = append(env, kv)
		}
	}
	return append(env, "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1")
}

// pyWorker is a Python worker process started by a test.
type pyWorker struct {
	cmd   *exec.Cmd
	log   *logBuffer // stderr, and stdout's lines
	ready chan struct{}
	done  chan struct{}
}

// startPythonWorker starts python/examples/upper_worker.py against target
// and waits until it prints "ready" (the node welcomed it). The process is
// killed when the test ends, and its output dumped if the test failed.
func startPythonWorker(t *testing.T, target, name string) *pyWorker {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	w := &pyWorker{log: &logBuffer{}, ready: make(chan struct{}), done: make(chan struct{})}
	w.cmd = exec.Command(debianPython, filepath.Join(root, "python", "examples", "upper_worker.py"),
		"--target", target, "--name", name, "--concurrency", "2")
	w.cmd.Env = pythonEnv()
	w.cmd.Stderr = w.log
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	setSysProcAttr(w.cmd)
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start the Python worker: %v", err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stdout)
		seen := false
		for sc.Scan() {
			fmt.Fprintf(w.log, "stdout: %s\n", sc.Text())
			if sc.Text() == "ready" && !seen {
				seen = true
				close(w.ready)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		<-copied // Wait closes stdout: read it all first
		_ = w.cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		w.kill(t)
		if t.Failed() {
			t.Logf("log of the Python worker %s (pid %d):\n%s", name, w.cmd.Process.Pid, w.log.String())
		}
	})
	timer := time.NewTimer(waitLong)
	defer timer.Stop()
	select {
	case <-w.ready:
		return w
	case <-w.done:
		t.Fatalf("the Python worker exited before it was ready: %v", w.cmd.ProcessState)
	case <-timer.C:
		t.Fatalf("the Python worker did not print \"ready\" within %s", waitLong)
	}
	return nil
}

// kill sends SIGKILL and waits for the process to end.
func (w *pyWorker) kill(t *testing.T) {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("SIGKILL the Python worker: %v", err)
	}
	timer := time.NewTimer(waitExitTimeout)
	defer timer.Stop()
	select {
	case <-w.done:
	case <-timer.C:
		t.Errorf("the Python worker (pid %d) still running %s after SIGKILL", w.cmd.Process.Pid, waitExitTimeout)
	}
}

// nodeKinds returns the kinds the node p advertises in ListNodes.
func nodeKinds(p *taskd) ([]string, error) {
	ctx, cancel := rpcCtx()
	defer cancel()
	n, err := p.self(ctx)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, errors.New("the node is not listed")
	}
	return n.GetKinds(), nil
}

// TestPythonWorker runs python/examples/upper_worker.py, a remote worker
// written in Python on the generated code in python/taskd/v1, against a real
// node with no handler of its own for py-upper: the node advertises the
// kind while the worker is connected, dispatches the kind's run to it, and
// commits its outcome (message and new data); a kind nothing serves is
// refused at scheduling; and once the worker is killed the node no longer
// advertises its kind.
func TestPythonWorker(t *testing.T) {
	t.Parallel()
	requirePython(t)
	dir := t.TempDir()
	node := startNode(t, nodeOptions{name: "py-node", dataDir: filepath.Join(dir, "data")})
	c := node.Client()

	kinds, err := nodeKinds(node)
	if err != nil {
		t.Fatalf("ListNodes: %v", err)
	}
	if slices.Contains(kinds, "py-upper") {
		t.Fatalf("the node advertises py-upper before any worker connected: kinds %v", kinds)
	}

	worker := startPythonWorker(t, node.listen, "py-upper-worker")
	eventually(t, waitLong, "the node advertises py-upper", func() error {
		kinds, err := nodeKinds(node)
		if err != nil {
			return err
		}
		if !slices.Contains(kinds, "py-upper") {
			return fmt.Errorf("kinds %v", kinds)
		}
		return nil
	})

	// The node's own check of the cluster's kinds may trail its
	// registration for a moment; the idempotency key makes a retry safe.
	var task *taskdv1.Task
	eventually(t, waitLong, "schedule a py-upper task", func() error {
		ctx, cancel := rpcCtx()
		defer cancel()
		resp, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{
			Identity: "pia", Kind: "py-upper", Payload: []byte("hello"), Triggers: onceAfter(0),
			Scope: taskdv1.Scope_SCOPE_IDENTITY, IdempotencyKey: "py-upper-hello",
		}})
		if err != nil {
			if status.Code(err) == codes.InvalidArgument || status.Code(err) == codes.FailedPrecondition {
				return err
			}
			t.Fatalf("ScheduleTask(py-upper): %v", err)
		}
		task = resp.GetTask()
		return nil
	})

	done := waitTaskState(t, c, "pia", task.GetId(), taskdv1.TaskState_TASK_STATE_COMPLETED)
	runs := mustListRuns(t, c, "pia", task.GetId())
	if last := done.GetLastRun(); last.GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS || last.GetMessage() != "HELLO" {
		t.Errorf("last run %v, want SUCCESS with message \"HELLO\"%s", last, describeRuns(runs))
	}
	if len(runs) != 1 || runs[0].GetMessage() != "HELLO" || runs[0].GetNode() != "py-node" {
		t.Errorf("runs (newest first) = %s\nwant one SUCCESS run on py-node with message \"HELLO\"", describeRuns(runs))
	}
	if got := string(done.GetSpec().GetData()); got != "seen" {
		t.Errorf("task data = %q, want %q (set by the Python handler)", got, "seen")
	}

	// A kind that nothing serves is refused, naming the kind.
	ctx, cancel := rpcCtx()
	_, err = c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{
		Identity: "pia", Kind: "py-nothing", Triggers: onceAfter(0), Scope: taskdv1.Scope_SCOPE_IDENTITY,
	}})
	cancel()
	if code := status.Code(err); (code != codes.FailedPrecondition && code != codes.InvalidArgument) ||
		!strings.Contains(status.Convert(err).Message(), "py-nothing") {
		t.Errorf("ScheduleTask(py-nothing) = %v, want FailedPrecondition or InvalidArgument naming py-nothing", err)
	}

	// Once the worker is gone, the node stops advertising its kind.
	worker.kill(t)
	eventually(t, waitLong, "the node stops advertising py-upper", func() error {
		kinds, err := nodeKinds(node)
		if err != nil {
			return err
		}
		if slices.Contains(kinds, "py-upper") {
			return fmt.Errorf("kinds %v", kinds)
		}
		return nil
	})
}

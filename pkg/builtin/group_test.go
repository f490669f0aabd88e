//go:build unix

package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
)

// waitFor checks cond every few milliseconds until it returns nil, and fails
// the test with its last error if that does not happen within timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// processGone reports whether pid has exited. A zombie has exited: its
// parent may be a process that does not reap (a reparented orphan).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist) && runtimeHasProc()
	}
	// The state follows the command name in parentheses, which may hold
	// spaces or parentheses itself.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z' || stat[i+2] == 'X'
	}
	return false
}

// runtimeHasProc reports whether /proc describes processes here.
func runtimeHasProc() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// readPids waits until file holds n pids, one a line, and returns them.
func readPids(t *testing.T, file string, n int) []int {
	t.Helper()
	var pids []int
	waitFor(t, 10*time.Second, fmt.Sprintf("%d pids in %s", n, file), func() error {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				return fmt.Errorf("bad pid %q", f)
			}
			pids = append(pids, pid)
		}
		if len(pids) < n {
			return fmt.Errorf("%d pids so far: %v", len(pids), pids)
		}
		return nil
	})
	return pids
}

// requireChildGone runs h, a command that leaves a background child
// running and prints its pid, and requires the run to succeed and the
// child to be gone after it (what says so).
func requireChildGone(t *testing.T, h taskservice.Handler, what string) {
	t.Helper()
	msg, err := runExec(t, context.Background(), h, testRun(""))
	if err != nil {
		t.Fatalf("err = %v, want nil", err)
	}
	pid, err := strconv.Atoi(msg)
	if err != nil {
		t.Fatalf("message = %q, want the background child's pid", msg)
	}
	requireGone(t, what, []int{pid})
}

// requireGone waits until every pid has exited; a survivor is killed after
// the failure so that it does not outlive the test.
func requireGone(t *testing.T, what string, pids []int) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	waitFor(t, 10*time.Second, what, func() error {
		for _, pid := range pids {
			if !processGone(pid) {
				return fmt.Errorf("pid %d still running (of %v)", pid, pids)
			}
		}
		return nil
	})
}

// expiringContext is a context whose deadline passes when the test calls
// expire: a run timeout at a moment the test chooses instead of a race
// against the clock.
type expiringContext struct {
	context.Context
	once sync.Once
	done chan struct{}
}

func newExpiringContext() *expiringContext {
	return &expiringContext{Context: context.Background(), done: make(chan struct{})}
}

func (c *expiringContext) expire() { c.once.Do(func() { close(c.done) }) }

func (c *expiringContext) Done() <-chan struct{} { return c.done }

func (c *expiringContext) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// spawnScript starts two grandchildren, one of them through a nested shell
// (a great-grandchild), writes the pids of all of them and of the command's
// own shell to $PIDS, and waits.
const spawnScript = `sleep 300 & echo $! >> "$PIDS"; ` +
	`sh -c 'sleep 301 & echo $! >> "$PIDS"; echo $$ >> "$PIDS"; wait' & echo $! >> "$PIDS"; ` +
	`echo $$ >> "$PIDS"; wait`

// spawnedPids is how many pids spawnScript writes.
const spawnedPids = 5

// TestExecTimeoutKillsGrandchildren lets a run time out once its command has
// started children, grandchildren and a nested shell's children, and checks
// that the run fails with a retryable timeout and every one of them is gone.
func TestExecTimeoutKillsGrandchildren(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	h := NewExec(spawnScript, ExecOptions{Env: []string{"PIDS=" + pidFile}})
	ctx := newExpiringContext()
	done := make(chan error, 1)
	go func() {
		_, err := h.(*execHandler).run(ctx, testRun(""))
		done <- err
	}()
	pids := readPids(t, pidFile, spawnedPids)
	ctx.expire()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !taskservice.IsRetryable(err) ||
			!strings.Contains(err.Error(), "run timed out, process group killed") {
			t.Errorf("err = %v, want a retryable timeout that killed the process group", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exec handler did not return within 10s of the timeout")
	}
	requireGone(t, "every process of the timed-out run gone", pids)
}

// TestExecLeftoversKilledWhenRunEnds checks that what a successful command
// left running in the background is killed when the run ends.
func TestExecLeftoversKilledWhenRunEnds(t *testing.T) {
	t.Parallel()
	requireChildGone(t, NewExec(`sleep 300 >/dev/null 2>&1 & echo $!`, ExecOptions{}), "the background child of a finished run gone")
}

// TestGroupDiesWithLifeline stands in for the node's death: closing the
// lifeline is what the kernel does to the write end when the node dies. The
// watcher must then kill the command and everything it started.
func TestGroupDiesWithLifeline(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pids")
	g, err := startGroup()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", spawnScript)
	cmd.Env = append(os.Environ(), "PIDS="+pidFile)
	g.join(cmd)
	if err := cmd.Start(); err != nil {
		_ = g.close()
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	pids := readPids(t, pidFile, spawnedPids)

	if err := g.lifeline.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("command ended with %v, want killed by SIGKILL", err)
		}
	case <-time.After(10 * time.Second):
		_ = g.kill()
		<-waited
		t.Error("command still running 10s after the lifeline closed")
	}
	requireGone(t, "every process of the group gone after the lifeline closed",
		append(pids, g.pgid))
	_ = g.watcher.Wait()
}

// TestExecStdinReachesNestedCommands checks that the payload on stdin is
// read in full by a command that hands it to a pipeline, and that the exit
// code and stdout pass through.
func TestExecStdinReachesNestedCommands(t *testing.T) {
	t.Parallel()
	payload := strings.Repeat("0123456789abcdef", 64<<10/16) // more than a pipe buffer
	msg, err := runExec(t, context.Background(),
		NewExec(`n=$(cat | wc -c); echo "$n"; exit 75`, ExecOptions{}), testRun(payload))
	if !taskservice.IsRetryable(err) || !strings.Contains(fmt.Sprint(err), "exit code 75") {
		t.Errorf("err = %v, want a retry requested by exit code 75", err)
	}
	if strings.TrimSpace(msg) != strconv.Itoa(len(payload)) {
		t.Errorf("message = %q, want the payload's length %d", msg, len(payload))
	}
}

// The command's stdin is complete before the command starts: reading it
// needs no writer left (a pipe whose write end is already closed, or a
// file), so a node paused after the fork cannot hold the command's start
// back. Both sizes: through a pipe, and through a removed temporary file.
func TestPayloadIsCompleteBeforeTheCommandStarts(t *testing.T) {
	for _, size := range []int{0, 10, pipePayloadMax, pipePayloadMax + 1, 300 << 10} {
		payload := bytes.Repeat([]byte("p"), size)
		f, err := payloadFile(payload)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(f)
		_ = f.Close()
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("size %d: read %d bytes, %v", size, len(got), err)
		}
	}
}

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// ctlResult is what one taskctl invocation did.
type ctlResult struct {
	stdout, stderr string
	code           int
}

// taskctl runs the taskctl binary against addr and returns its output and
// exit code.
func taskctl(t testing.TB, addr string, args ...string) ctlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cmd := exec.CommandContext(ctx, taskctlBin, append([]string{"--addr", addr}, args...)...)
	cmd.Env = childEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := ctlResult{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		res.code = ee.ExitCode()
	default:
		t.Fatalf("taskctl %s: %v\nstderr: %s", strings.Join(args, " "), err, res.stderr)
	}
	return res
}

// expect fails the test unless r exited with code and its stdout (for code
// 0) or stderr (otherwise) contains every one of want.
func (r ctlResult) expect(t testing.TB, what string, code int, want ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("%s: exit code %d, want %d\nstdout: %s\nstderr: %s", what, r.code, code, r.stdout, r.stderr)
		return
	}
	out := r.stdout
	if code != 0 {
		out = r.stderr
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s: output does not contain %q:\n%s", what, w, out)
		}
	}
}

// TestTaskctlAgainstRealNode drives a real node with the taskctl binary.
func TestTaskctlAgainstRealNode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	node := startNode(t, nodeOptions{name: "ctl-node", dataDir: filepath.Join(dir, "data"), extra: []string{"--exec", "fast=cat"}})
	addr := node.listen

	r := taskctl(t, addr, "schedule", "--identity", "alice", "--kind", "fast", "--scope", "identity", "--payload", "x")
	r.expect(t, "schedule", 0)
	id := strings.TrimSpace(r.stdout)
	if len(id) != 26 {
		t.Fatalf("schedule printed %q, want a task id", r.stdout)
	}

	taskctl(t, addr, "get", "--identity", "alice", id).expect(t, "get", 0, id, "alice", "fast", "IDENTITY")

	r = taskctl(t, addr, "-o", "json", "get", "--identity", "alice", id)
	r.expect(t, "-o json get", 0)
	var got struct {
		Task struct {
			ID   string `json:"id"`
			Spec struct {
				Identity string `json:"identity"`
			} `json:"spec"`
		} `json:"task"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Errorf("-o json get: output is not JSON: %v\n%s", err, r.stdout)
	} else if got.Task.ID != id || got.Task.Spec.Identity != "alice" {
		t.Errorf("-o json get: task id %q identity %q, want %q alice", got.Task.ID, got.Task.Spec.Identity, id)
	}

	// The handler echoes the payload, which becomes the run's message.
	waitTaskState(t, node.Client(), "alice", id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	taskctl(t, addr, "runs", "--identity", "alice", id).expect(t, "runs", 0, "RUN", "OUTCOME", "SUCCESS", "ctl-node")
	taskctl(t, addr, "list", "--identity", "alice").expect(t, "list", 0, "ID", id, "COMPLETED", "SUCCESS")
	taskctl(t, addr, "nodes").expect(t, "nodes", 0, "NAME", "ctl-node", "RUNNING", addr)
	taskctl(t, addr, "identity", "alice").expect(t, "identity", 0, "alice", "yes", "ctl-node")

	r = taskctl(t, addr, "schedule", "--identity", "alice", "--kind", "fast", "--scope", "identity", "--every", "1h")
	r.expect(t, "schedule --every", 0)
	periodic := strings.TrimSpace(r.stdout)
	taskctl(t, addr, "cancel", "--identity", "alice", periodic).expect(t, "cancel", 0, periodic, "CANCELED")
	taskctl(t, addr, "get", "--identity", "alice", periodic).expect(t, "get after cancel", 0, "CANCELED")

	taskctl(t, addr, "schedule", "--identity", "alice", "--kind", "fast").expect(t, "schedule without --scope", 2, "--scope")
	taskctl(t, addr, "get", "--identity", "alice", "0000000000000000000000000z").expect(t, "get of an unknown id", 1, "NotFound")

	// A single argument cannot hold 256 KiB on Linux (MAX_ARG_STRLEN is
	// 128 KiB), so the oversized payload comes from a file.
	big := filepath.Join(dir, "big-payload")
	if err := os.WriteFile(big, bytes.Repeat([]byte("p"), 256<<10+1), 0o600); err != nil {
		t.Fatal(err)
	}
	taskctl(t, addr, "schedule", "--identity", "alice", "--kind", "fast", "--scope", "identity", "--payload-file", big).
		expect(t, "schedule with a payload over 256 KiB", 1, "InvalidArgument", "payload")
}

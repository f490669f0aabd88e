//go:build unix

package integration

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// processGone reports whether pid has exited. A zombie has exited: an
// orphan's new parent may not reap it at once.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses, which may hold
	// spaces or parentheses itself.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z' || stat[i+2] == 'X'
	}
	return false
}

// TestExecCommandDiesWithNode runs an exec command that starts a background
// child and waits, SIGKILLs the node while the run is in flight, and checks
// that both the command's shell and its child are gone: a node that dies
// leaves no copy of a run behind to run beside the node that takes it over.
func TestExecCommandDiesWithNode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	hold := fmt.Sprintf(`echo $$ >> %[1]s; sleep 300 & echo $! >> %[1]s; wait`, shellQuote(pidFile))
	node := startNode(t, nodeOptions{
		name:    "exec-dies-node",
		dataDir: filepath.Join(dir, "data"),
		extra:   []string{"--exec", "hold=" + hold},
	})
	schedule(t, node.Client(), &taskdv1.TaskSpec{Identity: "erin", Kind: "hold", Triggers: onceAfter(0)})

	var pids []int
	eventually(t, waitLong, "the command's shell and background child write their pids", func() error {
		b, err := os.ReadFile(pidFile)
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
		if len(pids) < 2 {
			return fmt.Errorf("pids so far: %v", pids)
		}
		return nil
	})
	t.Cleanup(func() {
		for _, pid := range pids {
			if !processGone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	for _, pid := range pids {
		if processGone(pid) {
			t.Fatalf("pid %d of %v gone before the node was killed", pid, pids)
		}
	}

	node.Kill()
	eventually(t, waitLong, "the command's shell and child gone after SIGKILL of the node", func() error {
		for _, pid := range pids {
			if !processGone(pid) {
				return fmt.Errorf("pid %d (of %v) still running", pid, pids)
			}
		}
		return nil
	})
}

//go:build linux

package builtin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
)

// runGuarded runs command behind the start guard with the given lease
// deadline, as the exec handler does, and returns what it printed, its
// error and whether it refused to start.
func runGuarded(t *testing.T, command string, deadline time.Time, stdin string) (string, error, bool) {
	t.Helper()
	ctx := taskservice.ContextWithLeaseDeadline(context.Background(), deadline)
	cmd, guard, env, err := guardCommand(ctx, command)
	if err != nil {
		t.Fatal(err)
	}
	defer guard.close()
	if guard == nil {
		t.Fatal("no guard for a context with a lease deadline")
	}
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &out
	err = cmd.Start()
	guard.started()
	if err == nil {
		err = cmd.Wait()
	}
	return out.String(), err, guard.refused()
}

// A command whose lease deadline has passed when its shell starts does not
// run, and the node learns it did not (not from an exit code the command
// could have chosen).
func TestGuardRefusesAfterTheLeaseDeadline(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	out, err, refused := runGuarded(t, "touch "+marker+"; echo ran", time.Now().Add(-time.Second), "")
	if !refused || err != nil || out != "" {
		t.Fatalf("refused %v, err %v, out %q: want a refusal and nothing run", refused, err, out)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the command ran: %v", err)
	}
}

// Before the deadline the guard is invisible: the payload on stdin, stdout,
// the exit code and the arguments of the command are as without it.
func TestGuardPassesThroughBeforeTheDeadline(t *testing.T) {
	out, err, refused := runGuarded(t, `read -r x; echo "got $x from $0"; exit 75`, time.Now().Add(time.Minute), "payload\n")
	if refused {
		t.Fatal("refused before the deadline")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 75 {
		t.Fatalf("err %v: want exit code 75", err)
	}
	if out != "got payload from /bin/sh\n" {
		t.Fatalf("out %q", out)
	}
	// The guard's descriptor is closed before the command: fd 3 is free.
	out, _, _ = runGuarded(t, `if { true >&3; } 2>/dev/null; then echo open; else echo closed; fi`, time.Now().Add(time.Minute), "")
	if out != "closed\n" {
		t.Fatalf("fd 3 in the command: %q, want closed", out)
	}
}

//go:build linux

package builtin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
)

// guardScript runs in the command's own shell before the command: if the
// node's lease deadline has passed (read on the boot clock of
// /proc/uptime, in centiseconds, without forking), it tells the node
// through fd 3 and exits without running the command; else it closes fd 3
// and becomes `/bin/sh -c COMMAND`, exactly as an unguarded run would be.
// The node can be paused (SIGSTOP) between its own last check and the fork
// of this shell; this check, made by the new process itself, is the one a
// pause cannot slip past.
const guardScript = `read -r up _ </proc/uptime
now=${up%.*}${up#*.}
if [ "$now" -gt "$TASKD_LEASE_DEADLINE_CS" ]; then echo late >&3; exit 0; fi
exec 3>&-
exec /bin/sh -c "$1"`

// startGuard is the check a run's command makes at its start that the node
// still held its lease; nil when the run has no lease deadline (a context
// that is not a run's).
type startGuard struct {
	refusal *os.File // read end: "late" if the command refused to start
	child   *os.File // write end, fd 3 of the command's shell
}

// guardCommand returns the command that runs h.command behind the guard,
// and the guard; without a lease deadline, the plain command and nil.
func guardCommand(ctx context.Context, command string) (*exec.Cmd, *startGuard, []string, error) {
	deadline, ok := taskservice.LeaseDeadline(ctx)
	if !ok {
		return exec.CommandContext(ctx, "/bin/sh", "-c", command), nil, nil, nil
	}
	cs, err := uptimeCentis()
	if err != nil {
		return nil, nil, nil, err
	}
	left := time.Until(deadline)
	deadlineCS := cs + int64(left/(10*time.Millisecond))
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("start guard pipe: %w", err)
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", guardScript, "/bin/sh", command)
	cmd.ExtraFiles = []*os.File{w}
	env := []string{"TASKD_LEASE_DEADLINE_CS=" + strconv.FormatInt(deadlineCS, 10)}
	return cmd, &startGuard{refusal: r, child: w}, env, nil
}

// started is called once the command's process exists (or failed to): the
// node's copy of the write end is closed, so that reading the refusal ends
// when the command closes or exits.
func (g *startGuard) started() {
	if g != nil {
		_ = g.child.Close()
	}
}

// refused reports, after the command ended, whether it refused to start;
// it releases the guard.
func (g *startGuard) refused() bool {
	if g == nil {
		return false
	}
	defer g.refusal.Close()
	b := make([]byte, 8)
	n, _ := g.refusal.Read(b)
	return strings.HasPrefix(string(b[:n]), "late")
}

// close releases a guard whose command never ran.
func (g *startGuard) close() {
	if g != nil {
		_ = g.child.Close()
		_ = g.refusal.Close()
	}
}

// uptimeCentis reads /proc/uptime, the boot clock the guard reads, in
// centiseconds.
func uptimeCentis() (int64, error) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, fmt.Errorf("read /proc/uptime: %w", err)
	}
	up, _, _ := strings.Cut(string(b), " ")
	whole, frac, ok := strings.Cut(up, ".")
	if !ok || len(frac) != 2 {
		return 0, fmt.Errorf("read /proc/uptime: unexpected %q", up)
	}
	return strconv.ParseInt(whole+frac, 10, 64)
}

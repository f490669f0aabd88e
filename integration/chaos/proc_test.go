//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/taskd/taskd/internal/freeport"
)

const (
	// pollEvery is how often a waited-for condition is checked.
	pollEvery = 20 * time.Millisecond
	// exitTimeout bounds the wait for a signalled process to exit.
	exitTimeout = 30 * time.Second
)

// proc is one run of a child process. Its exit time is kept, since the
// checker bounds a handler run that never logged its end by the end of the
// taskd process that ran it.
type proc struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{}
	mu      sync.Mutex
	exited  time.Time // set before done is closed
	paused  bool      // SIGSTOPped and not yet continued
}

// startProc starts cmd and a goroutine that waits for it.
func startProc(cmd *exec.Cmd) (*proc, error) {
	// The kernel kills the child if the test binary dies (a test timeout
	// panics past the cleanups), so no process outlives the suite.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		p.exited = time.Now()
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// alive reports whether the process has not exited.
func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// exitTime is when the process was seen to exit (zero while it runs).
func (p *proc) exitTime() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// signal sends sig; SIGSTOP and SIGCONT keep track of the pause.
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	return nil
}

// resume sends SIGCONT if the process is paused.
func (p *proc) resume() {
	p.mu.Lock()
	paused := p.paused
	p.mu.Unlock()
	if paused {
		_ = p.signal(syscall.SIGCONT)
	}
}

// waitExit waits up to timeout for the process to exit.
func (p *proc) waitExit(timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// kill sends SIGKILL (continuing a paused process is not needed: SIGKILL
// ends a stopped process too) and waits for the exit.
func (p *proc) kill() error {
	if !p.alive() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	if !p.waitExit(exitTimeout) {
		return fmt.Errorf("pid %d still running %s after SIGKILL", p.cmd.Process.Pid, exitTimeout)
	}
	return nil
}

// freeAddr returns a loopback host:port that was free a moment ago, below
// the ephemeral range, so that no member's outgoing connection takes it
// before the member meant for it binds it (freeport).
func freeAddr() (string, error) { return freeport.Addr() }

// childEnv is the test's environment without TASKD_* variables, which
// would change what the children do, and without the member request.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TASKD_") || strings.HasPrefix(kv, memberEnv+"=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// waitFor calls check every pollEvery until it returns nil or ctx ends, and
// then returns check's last error.
func waitFor(ctx context.Context, check func(context.Context) error) error {
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(pollEvery):
		}
	}
}

// pause waits d or until ctx ends; it paces the fault schedule (a fault's
// length, the gap between faults), it does not wait for anything to happen.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

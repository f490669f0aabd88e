package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/taskd/taskd/internal/freeport"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

const (
	// pollEvery is how often a waited-for condition is checked.
	pollEvery = 5 * time.Millisecond
	// waitLong bounds every wait for a condition: generous, because a
	// deadline is only reached when the test is failing anyway.
	waitLong = 30 * time.Second
	// waitExitTimeout bounds the wait for a process to exit.
	waitExitTimeout = 20 * time.Second
	// rpcTimeout bounds one RPC made by a test.
	rpcTimeout = 10 * time.Second
)

// logBuffer collects a process's output; it is safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns everything written so far.
func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Contains reports whether s was written.
func (l *logBuffer) Contains(s string) bool { return strings.Contains(l.String(), s) }

// nodeOptions says how to start a taskd process. The flags --name,
// --data-dir, --listen, --http, --etcd-listen, --lease-ttl 2s and
// --log-level debug are always given; extra follows them.
type nodeOptions struct {
	name    string
	dataDir string
	extra   []string
	env     []string // KEY=value entries added to the (TASKD_-free) environment
	workDir string   // the process's working directory ("" = the test's)
	// etcd, when set, is the endpoint of an external etcd: the node joins it
	// with --etcd instead of starting an embedded one (no --etcd-listen).
	etcd string
	// listen, when set, is the gRPC API address instead of a fresh port.
	listen string
	// bin, when set, is the taskd binary to run instead of taskdBin.
	bin string
}

// taskd is one taskd process started by a test.
type taskd struct {
	t        testing.TB
	opts     nodeOptions
	listen   string // gRPC API address
	httpAddr string
	etcdURL  string
	launched time.Time // just before the process was started

	cmd     *exec.Cmd
	log     *logBuffer // stdout and stderr
	done    chan struct{}
	waitErr error // set before done is closed

	connMu sync.Mutex
	conn   *grpc.ClientConn
	client taskdv1.TaskServiceClient
}

// freeAddr returns a loopback address with a port that was free a moment
// ago. taskd binds its --listen, --http and --etcd-listen addresses itself
// and has no way to report ports it chose, so the test picks them; another
// process can take one in between, which startNode answers by launching
// again on fresh ports.
//
// The port is below the ephemeral range (freeport), where no outgoing
// connection of another process can take it meanwhile.
func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatalf("pick a free port: %v", err)
	}
	return addr
}

// childEnv is the test's environment without TASKD_* and TASKCTL_*
// variables, which would change what the children do.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TASKD_") || strings.HasPrefix(kv, "TASKCTL_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// launchRefused launches taskd with opts and requires it to exit, non-zero,
// within waitExitTimeout (what names it in a failure). It returns the
// process's output.
func launchRefused(t *testing.T, opts nodeOptions, what string) string {
	t.Helper()
	p := launch(t, opts)
	code, ok := p.waitExit(waitExitTimeout)
	if !ok {
		t.Fatalf("%s is still running after %s", what, waitExitTimeout)
	}
	if code == 0 {
		t.Errorf("%s exited 0, want non-zero", what)
	}
	return p.log.String()
}

// launch starts a taskd process on fresh ports without waiting for it. The
// process is killed (if still running) when the test ends, and its log is
// dumped if the test failed.
func launch(t testing.TB, opts nodeOptions) *taskd {
	t.Helper()
	p := &taskd{
		t:        t,
		opts:     opts,
		listen:   freeAddr(t),
		httpAddr: freeAddr(t),
		etcdURL:  "http://" + freeAddr(t),
		log:      &logBuffer{},
		done:     make(chan struct{}),
	}
	if opts.listen != "" {
		p.listen = opts.listen
	}
	args := []string{"--name", opts.name}
	if opts.dataDir != "" { // else the default, ./taskd-data
		args = append(args, "--data-dir", opts.dataDir)
	}
	args = append(args, "--listen", p.listen, "--http", p.httpAddr)
	if opts.etcd != "" {
		args = append(args, "--etcd", opts.etcd)
	} else {
		args = append(args, "--etcd-listen", p.etcdURL)
	}
	args = append(args,
		"--lease-ttl", "2s",
		"--log-level", "debug",
	)
	args = append(args, opts.extra...)
	bin := taskdBin
	if opts.bin != "" {
		bin = opts.bin
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(childEnv(), opts.env...)
	cmd.Dir = opts.workDir
	cmd.Stdout = p.log
	cmd.Stderr = p.log
	// The exec handler's children get pipes of their own, so the output
	// copiers end with taskd; WaitDelay is a safety net.
	cmd.WaitDelay = 5 * time.Second
	setSysProcAttr(cmd)
	p.cmd = cmd
	p.launched = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start taskd: %v", err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("log of taskd %s (pid %d, api %s):\n%s", opts.name, cmd.Process.Pid, p.listen, p.log.String())
		}
	})
	return p
}

// launchAttempts bounds the launches of one node that lose a port race.
const launchAttempts = 3

// startNode starts a taskd process and waits until it is RUNNING. If the
// process could not bind one of its ports (taken by someone else since it
// was picked, see freeAddr), it is started again on fresh ports, up to
// launchAttempts launches in all; any other failure fails the test at once.
func startNode(t testing.TB, opts nodeOptions) *taskd {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p := launch(t, opts)
		err := p.waitRunning(waitLong)
		if err == nil {
			return p
		}
		if attempt < launchAttempts && p.exited() && p.log.Contains("address already in use") {
			t.Logf("taskd %s lost a port race; starting it again on other ports", opts.name)
			continue
		}
		t.Fatalf("taskd %s did not become RUNNING: %v", opts.name, err)
	}
}

// exited reports whether the process has ended.
func (p *taskd) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitCode is the process's exit code (-1 when a signal ended it); only
// valid once it has exited.
func (p *taskd) exitCode() int {
	<-p.done
	if p.waitErr == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// waitExit waits up to timeout for the process to exit and returns its exit
// code; ok is false if it is still running.
func (p *taskd) waitExit(timeout time.Duration) (code int, ok bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.exitCode(), true
	case <-timer.C:
		return 0, false
	}
}

// Client returns a gRPC client of the process's API; the connection is made
// on first use and closed when the process is killed or stopped.
func (p *taskd) Client() taskdv1.TaskServiceClient {
	p.t.Helper()
	p.connMu.Lock()
	defer p.connMu.Unlock()
	if p.client == nil {
		conn, err := grpc.NewClient(p.listen,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			// Reconnect quickly while the process is starting.
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff: backoff.Config{
					BaseDelay:  10 * time.Millisecond,
					Multiplier: 1.6,
					Jitter:     0.2,
					MaxDelay:   200 * time.Millisecond,
				},
				MinConnectTimeout: 2 * time.Second,
			}))
		if err != nil {
			p.t.Fatalf("gRPC client for %s: %v", p.listen, err)
		}
		p.conn, p.client = conn, taskdv1.NewTaskServiceClient(conn)
	}
	return p.client
}

func (p *taskd) closeClient() {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	if p.conn != nil {
		_ = p.conn.Close()
		p.conn, p.client = nil, nil
	}
}

// self returns this process's node as ListNodes shows it, or nil if the
// listed node of that name is an earlier incarnation (started before this
// process was launched) or is missing.
func (p *taskd) self(ctx context.Context) (*taskdv1.Node, error) {
	resp, err := p.Client().ListNodes(ctx, &taskdv1.ListNodesRequest{})
	if err != nil {
		return nil, err
	}
	for _, n := range resp.GetNodes() {
		if n.GetName() == p.opts.name && !n.GetStartedAt().AsTime().Before(p.launched) {
			return n, nil
		}
	}
	return nil, nil
}

// waitRunning polls ListNodes until this process's node is RUNNING, and
// fails early if the process exits.
func (p *taskd) waitRunning(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if p.exited() {
			return fmt.Errorf("process exited with code %d before it was RUNNING", p.exitCode())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n, err := p.self(ctx)
		cancel()
		switch {
		case err != nil:
			last = err
		case n == nil:
			last = errors.New("node not registered yet")
		case n.GetState() == taskdv1.NodeState_NODE_STATE_RUNNING:
			return nil
		default:
			last = fmt.Errorf("node is %s", n.GetState())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not RUNNING after %s: %v", timeout, last)
		}
		time.Sleep(pollEvery)
	}
}

// Kill sends SIGKILL and waits for the process to end.
func (p *taskd) Kill() {
	p.closeClient()
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	if _, ok := p.waitExit(waitExitTimeout); !ok {
		p.t.Errorf("taskd %s (pid %d) still running %s after SIGKILL", p.opts.name, p.cmd.Process.Pid, waitExitTimeout)
	}
}

// Signal sends sig to the process (SIGSTOP, SIGCONT, ...).
func (p *taskd) Signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %s to taskd %s: %v", sig, p.opts.name, err)
	}
}

// freeze stops the process (SIGSTOP) and returns what resumes it
// (SIGCONT). One still frozen when the test ends is resumed, so that the
// cleanup's SIGKILL finds a runnable process.
func (p *taskd) freeze() (resume func()) {
	p.t.Helper()
	p.Signal(syscall.SIGSTOP)
	resumed := false
	p.t.Cleanup(func() {
		if !resumed {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	return func() {
		p.t.Helper()
		p.Signal(syscall.SIGCONT)
		resumed = true
	}
}

// Term sends SIGTERM, waits for the process to exit and returns its exit
// code. A process still running after the deadline fails the test and is
// killed.
func (p *taskd) Term() int {
	p.t.Helper()
	p.closeClient()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatalf("SIGTERM taskd %s: %v", p.opts.name, err)
	}
	code, ok := p.waitExit(waitExitTimeout)
	if !ok {
		p.t.Errorf("taskd %s did not exit within %s of SIGTERM", p.opts.name, waitExitTimeout)
		p.Kill()
		return p.exitCode()
	}
	return code
}

// eventually calls check every few milliseconds until it returns nil, and
// fails the test with check's last error if that does not happen within
// timeout.
func eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s: %v", what, timeout, err)
		}
		time.Sleep(pollEvery)
	}
}

// rpcCtx returns the context of one RPC made by a test.
func rpcCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), rpcTimeout)
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

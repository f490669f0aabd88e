//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// handlerKind is the task kind served by the logging exec handler.
const handlerKind = "chaos"

// handlerCommand is the exec handler: it appends a start line and, after
// sleeping for the seconds its payload names, an end line to logPath. Each
// line is one short O_APPEND write (dash's printf writes its output at
// once), so lines of concurrent handlers never interleave. Fields: wall
// clock ns, event, node, identity, task id, run number, attempt, fence.
func handlerCommand(logPath string) string {
	line := func(ev string) string {
		return `printf '%s ` + ev + ` %s %s %s %s %s %s\n' "$(date +%s%N)" "$TASKD_NODE" "$TASKD_IDENTITY" "$TASKD_TASK_ID" "$TASKD_RUN" "$TASKD_ATTEMPT" "$TASKD_FENCE" >>` + shellQuote(logPath)
	}
	return `read d; ` + line("start") + `; sleep "$d"; ` + line("end")
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// nodeConfig is what every taskd process of the suite shares.
type nodeConfig struct {
	etcd       []string
	handlerLog string
	dir        string
	txnFaults  string // TASKD_CHAOS_FAULTS, "" for none
	leaseTTL   time.Duration
}

// taskdNode is one taskd name; each launch is a new process (incarnation)
// under that name, on the same API address, so one gRPC connection serves
// every incarnation.
type taskdNode struct {
	name     string
	cfg      nodeConfig
	listen   string
	httpAddr string
	logPath  string
	conn     *grpc.ClientConn
	client   taskdv1.TaskServiceClient

	mu    sync.Mutex
	procs []*proc // every launch, in order
}

func newTaskdNode(name string, cfg nodeConfig) (*taskdNode, error) {
	listen, err := freeAddr()
	if err != nil {
		return nil, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(listen,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// Reconnect quickly after a restart.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 200 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}))
	if err != nil {
		return nil, err
	}
	return &taskdNode{
		name: name, cfg: cfg, listen: listen, httpAddr: httpAddr,
		logPath: filepath.Join(cfg.dir, "taskd-"+name+".log"),
		conn:    conn, client: taskdv1.NewTaskServiceClient(conn),
	}, nil
}

// launch starts a new incarnation without waiting for it.
func (n *taskdNode) launch() (*proc, error) {
	args := []string{
		"--name", n.name,
		"--listen", n.listen, "--http", n.httpAddr,
		"--etcd", strings.Join(n.cfg.etcd, ","),
		"--lease-ttl", n.cfg.leaseTTL.String(),
		"--handoff-start", "0s",
		"--handoff-period", "250ms",
		"--vote-delay", "500ms",
		"--remove-delay", "1s",
		"--drain-timeout", "3s",
		// The checker reads every run of a task from its history.
		"--history", "1000",
		"--log-level", "debug",
		"--exec", handlerKind + "=" + handlerCommand(n.cfg.handlerLog),
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== launch %s at %s\n", n.name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(taskdBin, args...)
	cmd.Env = childEnv()
	if n.cfg.txnFaults != "" {
		cmd.Env = append(cmd.Env, "TASKD_CHAOS_FAULTS="+n.cfg.txnFaults)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// The exec handlers' children hold the output file, not a pipe, so Wait
	// returns when taskd exits.
	p, err := startProc(cmd)
	if err != nil {
		return nil, fmt.Errorf("start taskd %s: %w", n.name, err)
	}
	n.mu.Lock()
	n.procs = append(n.procs, p)
	n.mu.Unlock()
	return p, nil
}

// waitPortsFree waits until the node's addresses can be bound again. A
// SIGKILLed taskd is reaped at once, but a handler it was spawning at that
// instant still holds a copy of its listening sockets until that child's
// exec closes them (Go forks before it execs; the sockets are
// close-on-exec): a relaunch in that window fails with "address already in
// use", which is the harness's timing, not a fault of taskd.
func (n *taskdNode) waitPortsFree(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return waitFor(wctx, func(context.Context) error {
		for _, addr := range []string{n.listen, n.httpAddr} {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			if err := l.Close(); err != nil {
				return err
			}
		}
		return nil
	})
}

// current is the latest incarnation's process.
func (n *taskdNode) current() *proc {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.procs[len(n.procs)-1]
}

// lifetimes returns every launch of the node.
func (n *taskdNode) lifetimes() []*proc {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*proc(nil), n.procs...)
}

// start launches a new incarnation and waits until it is RUNNING.
func (n *taskdNode) start(ctx context.Context) error {
	if err := n.waitPortsFree(ctx); err != nil {
		return err
	}
	p, err := n.launch()
	if err != nil {
		return err
	}
	return n.waitRunning(ctx, p)
}

// waitRunning waits until ListNodes, asked of the node itself, shows this
// incarnation RUNNING.
func (n *taskdNode) waitRunning(ctx context.Context, p *proc) error {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := waitFor(wctx, func(ctx context.Context) error {
		if !p.alive() {
			return fmt.Errorf("process exited (see %s)", n.logPath)
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		resp, err := n.client.ListNodes(rctx, &taskdv1.ListNodesRequest{})
		if err != nil {
			return err
		}
		for _, nd := range resp.GetNodes() {
			if nd.GetName() != n.name || nd.GetStartedAt().AsTime().Before(p.started) {
				continue
			}
			if nd.GetState() == taskdv1.NodeState_NODE_STATE_RUNNING {
				return nil
			}
			return fmt.Errorf("node is %s", nd.GetState())
		}
		return errors.New("this incarnation is not registered yet")
	})
	if err != nil {
		return fmt.Errorf("taskd %s not RUNNING: %w", n.name, err)
	}
	return nil
}

// close kills the running incarnation and closes the connection.
func (n *taskdNode) close() error {
	err := n.current().kill()
	_ = n.conn.Close()
	return err
}

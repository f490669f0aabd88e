package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// RelocationResults are the figures of moving identities between nodes.
type RelocationResults struct {
	Moves             int     `json:"moves"`
	HandoffP50Ms      float64 `json:"handoff_p50_ms"`
	HandoffP99Ms      float64 `json:"handoff_p99_ms"`
	ReassignIDs       int     `json:"reassign_identities"`
	ReassignMappedMs  float64 `json:"reassign_mapped_ms"`
	ReassignLoadedMs  float64 `json:"reassign_loaded_ms"`
	FailoverMs        float64 `json:"failover_ms,omitempty"`
	FailoverTTL2sMs   float64 `json:"failover_ttl2s_ms,omitempty"`
	FailoverLeaseTTLs string  `json:"failover_lease_ttls,omitempty"`
}

// waiter is told of the first run of the bench task on one node.
type waiter struct {
	node string
	ch   chan time.Time
}

// measureMoves moves one identity with a 5 ms periodic task back and forth
// between two in-process nodes and returns the time from each MoveIdentity
// call to the first run on the new owner.
func measureMoves(ctx context.Context, etcdURL string, moves int) ([]time.Duration, error) {
	var current atomic.Pointer[waiter]
	tick := taskservice.HandlerFunc(func(ctx context.Context, r *taskservice.Run) error {
		if w := current.Load(); w != nil && w.node == r.Node {
			select {
			case w.ch <- time.Now():
			default:
			}
		}
		return nil
	})
	nodes, stop, err := startNodes(ctx, etcdURL, "/bench-move/", []string{"move-a", "move-b"}, tick, nodeOptions{})
	if err != nil {
		return nil, err
	}
	defer stop()
	a := nodes[0]
	spec := &taskdv1.TaskSpec{Identity: "mover", Kind: "tick", Scope: taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
			Interval: durationpb.New(5 * time.Millisecond)}}}}}
	if _, err := a.Schedule(ctx, []*taskdv1.TaskSpec{spec}); err != nil {
		return nil, err
	}
	owner := "move-a"
	var lat []time.Duration
	for i := 0; i < moves; i++ {
		target := "move-b"
		if owner == "move-b" {
			target = "move-a"
		}
		w := &waiter{node: target, ch: make(chan time.Time, 1)}
		current.Store(w)
		began := time.Now()
		if _, err := a.MoveIdentity(ctx, "mover", target); err != nil {
			return nil, fmt.Errorf("move %d: %w", i, err)
		}
		select {
		case at := <-w.ch:
			lat = append(lat, at.Sub(began))
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("move %d: no run on %s within 30s", i, target)
		}
		owner = target
	}
	return lat, nil
}

// measureReassign has node A own ids identities (one pending task each),
// stops A without handing them away (its lease is revoked, as when it
// expires), and times how long the placement leader on B takes to map them
// all to B, and B to load them: the scale scenario with two nodes and every
// identity scheduled through A.
func measureReassign(ctx context.Context, etcdURL string, ids int) (mapped, loaded time.Duration, err error) {
	r, err := measureScale(ctx, etcdURL, "/bench-reassign/", 2, ids, false)
	if err != nil {
		return 0, 0, err
	}
	if r.DeadIdentities != ids {
		return 0, 0, fmt.Errorf("the dead node held %d of %d identities", r.DeadIdentities, ids)
	}
	return time.Duration(r.MappedMs * float64(time.Millisecond)), time.Duration(r.LoadedMs * float64(time.Millisecond)), nil
}

// lookAhead is the in-process nodes' Config.LookAhead (-look-ahead; 0:
// none).
var lookAhead = time.Second

// coldAfter is the in-process nodes' Config.ColdAfter (-cold-after; 0:
// none).
var coldAfter = 2 * time.Minute

// nodeOptions tune the nodes a scenario starts.

type nodeOptions struct {
	workers   int
	listeners []taskservice.Listener
}

// orNone is d, or -1 (none) for 0, as taskservice.Config takes it.
func orNone(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// startNodes starts in-process nodes over etcdURL under prefix, with fast
// relocation settings (handoff polling from the start).
func startNodes(ctx context.Context, etcdURL, prefix string, names []string, h taskservice.Handler, o nodeOptions) ([]*taskservice.Node, func(), error) {
	var nodes []*taskservice.Node
	var clis []*clientv3.Client
	stop := func() {
		for _, n := range nodes {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_ = n.Stop(sctx)
			cancel()
		}
		for _, c := range clis {
			c.Close()
		}
	}
	for _, name := range names {
		cli, err := taskservice.DialEtcd([]string{etcdURL})
		if err != nil {
			stop()
			return nil, nil, err
		}
		clis = append(clis, cli)
		n, err := taskservice.New(taskservice.Config{
			Name: name, Client: cli, Prefix: prefix, Workers: o.workers, LeaseTTL: 2 * time.Second,
			HandoffStart: -1, MaxTxnOps: 1024, Handlers: map[string]taskservice.Handler{"tick": h},
			LookAhead: orNone(lookAhead),
			ColdAfter: orNone(coldAfter),
			Listeners: o.listeners,
		})
		if err != nil {
			stop()
			return nil, nil, err
		}
		if err := n.Start(ctx); err != nil {
			stop()
			return nil, nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, stop, nil
}

// measureFailover runs two taskd processes on the bench's etcd with the
// given lease TTL; a periodic task's identity is owned by the first, which
// is killed with SIGKILL; it returns the time from the kill to the first
// run of that task on the survivor.
func measureFailover(ctx context.Context, bin, etcdURL string, ttl time.Duration) (time.Duration, error) {
	dir, err := os.MkdirTemp("", "taskbench-failover-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	prefix := fmt.Sprintf("/bench-failover-%d/", ttl/time.Second)
	start := func(name string) (*exec.Cmd, string, error) {
		api, err := freePort()
		if err != nil {
			return nil, "", err
		}
		http, err := freePort()
		if err != nil {
			return nil, "", err
		}
		cmd := exec.Command(bin, "--name", name, "--etcd", etcdURL, "--prefix", prefix,
			"--data-dir", filepath.Join(dir, name), "--listen", api, "--http", http,
			"--lease-ttl", ttl.String(), "--handoff-start", "0", "--log-level", "error", "--exec", "tick=true")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return nil, "", err
		}
		return cmd, api, nil
	}
	a, aAddr, err := start("fail-a")
	if err != nil {
		return 0, err
	}
	defer func() { _ = a.Process.Kill(); _ = a.Wait() }()
	b, bAddr, err := start("fail-b")
	if err != nil {
		return 0, err
	}
	defer func() { _ = b.Process.Signal(syscall.SIGTERM); _ = b.Wait() }()
	ca, err := dialAPI(aAddr)
	if err != nil {
		return 0, err
	}
	defer ca.Close()
	cb, err := dialAPI(bAddr)
	if err != nil {
		return 0, err
	}
	defer cb.Close()
	api, bAPI := taskdv1.NewTaskServiceClient(ca), taskdv1.NewTaskServiceClient(cb)
	if err := waitRunning(ctx, api, "fail-a"); err != nil {
		return 0, err
	}
	if err := waitRunning(ctx, bAPI, "fail-b"); err != nil {
		return 0, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	resp, err := api.ScheduleTask(cctx, &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{
		Identity: "failover", Kind: "tick", Scope: taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
			Interval: durationpb.New(20 * time.Millisecond)}}}}}})
	cancel()
	if err != nil {
		return 0, fmt.Errorf("schedule: %w", err)
	}
	id := resp.Task.Id
	ranOn := func(node string) (time.Time, bool) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		runs, err := bAPI.ListRuns(cctx, &taskdv1.ListRunsRequest{Identity: "failover", TaskId: id})
		if err != nil {
			return time.Time{}, false
		}
		for i := len(runs.Runs) - 1; i >= 0; i-- {
			if runs.Runs[i].Node == node {
				return runs.Runs[i].StartedAt.AsTime(), true
			}
		}
		return time.Time{}, false
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if _, ok := ranOn("fail-a"); ok {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the task never ran on fail-a")
		}
		time.Sleep(5 * time.Millisecond)
	}
	killed := time.Now()
	_ = a.Process.Signal(syscall.SIGKILL)
	deadline = time.Now().Add(ttl + time.Minute)
	for {
		if at, ok := ranOn("fail-b"); ok {
			return at.Sub(killed), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no run on the survivor within %s", ttl+time.Minute)
		}
		time.Sleep(5 * time.Millisecond) // polling interval of the measurement
	}
}

func dialAPI(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

func waitRunning(ctx context.Context, c taskdv1.TaskServiceClient, name string) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := c.ListNodes(cctx, &taskdv1.ListNodesRequest{})
		cancel()
		if err == nil {
			for _, n := range resp.Nodes {
				if n.Name == name && n.State == taskdv1.NodeState_NODE_STATE_RUNNING {
					return nil
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s not RUNNING within a minute", name)
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

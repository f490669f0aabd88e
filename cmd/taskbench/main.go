// Command taskbench measures taskd on this machine against etcd's own raw
// throughput, in the same run and at the same concurrency, and prints a
// table (or JSON with -o json; -out FILE also writes the JSON to a file).
//
// It starts an embedded etcd (fsync on, as in production) in a temporary
// directory and one in-process node over it, then measures:
//
//   - start-up: embedded etcd start to node RUNNING;
//   - etcd raw Put throughput with -concurrency goroutines;
//   - schedule throughput: -tasks one-shot no-op tasks for -identities
//     identities, one ScheduleTask call each, -concurrency at a time;
//   - end-to-end throughput: the same tasks scheduled, run and committed
//     (from the first schedule call to the last commit).
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/taskd/taskd/pkg/etcdembed"
	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

type options struct {
	tasks       int
	identities  int
	concurrency int
	output      string
	out         string
	taskd       string
	moves       int
	reassign    int
	failover    string
	cpuprofile  string
	workers     int
}

// Results are the figures of one run.
type Results struct {
	Machine           string             `json:"machine"`
	Tasks             int                `json:"tasks"`
	Identities        int                `json:"identities"`
	Concurrency       int                `json:"concurrency"`
	StartupMs         float64            `json:"startup_ms"`
	BinaryStartupMs   float64            `json:"binary_startup_ms,omitempty"`
	EtcdPutPerSec     float64            `json:"etcd_put_per_sec"`
	ScheduleTasksPerS float64            `json:"schedule_tasks_per_sec"`
	E2ETasksPerSec    float64            `json:"e2e_tasks_per_sec"`
	E2ERatio          float64            `json:"e2e_ratio"`
	ScheduleRatio     float64            `json:"schedule_ratio"`
	FireLagP50Ms      float64            `json:"fire_lag_p50_ms"`
	FireLagP99Ms      float64            `json:"fire_lag_p99_ms"`
	FireLagMaxMs      float64            `json:"fire_lag_max_ms"`
	EtcdWritesPerTask float64            `json:"etcd_writes_per_task"`
	HandoffP99Ms      float64            `json:"handoff_p99_ms"`
	FailoverMs        float64            `json:"failover_ms"`
	Relocation        *RelocationResults `json:"relocation,omitempty"`
}

func main() {
	var o options
	flag.IntVar(&o.tasks, "tasks", 10000, "no-op one-shot tasks to schedule and run")
	flag.IntVar(&o.identities, "identities", 100, "identities the tasks are spread over")
	flag.IntVar(&o.concurrency, "concurrency", 64, "concurrent clients (also used for etcd's raw Put)")
	flag.StringVar(&o.output, "o", "table", "output: table or json")
	flag.StringVar(&o.out, "out", "", "also write the JSON results to this file")
	flag.StringVar(&o.taskd, "taskd", "", "taskd binary: also time its start (exec to RUNNING) on an empty embedded etcd, and failover")
	flag.IntVar(&o.moves, "moves", 100, "MoveIdentity calls to time (0 skips)")
	flag.IntVar(&o.reassign, "reassign", 10000, "identities of a dead node to reassign (0 skips)")
	flag.StringVar(&o.failover, "failover", "10s,2s", "lease TTLs at which to time failover (needs -taskd; empty skips)")
	flag.IntVar(&o.workers, "workers", 0, "the node's concurrent runs (0: same as -concurrency)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "taskbench:", err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	res, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	if o.out != "" {
		if err := writeJSON(o.out, res); err != nil {
			fmt.Fprintln(os.Stderr, "taskbench:", err)
			os.Exit(1)
		}
	}
	if o.output == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
		return
	}
	printTable(os.Stdout, res)
}

func writeJSON(path string, res *Results) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func printTable(w io.Writer, r *Results) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "machine\t%s\n", r.Machine)
	fmt.Fprintf(tw, "workload\t%d no-op one-shot tasks, %d identities, %d concurrent clients\n", r.Tasks, r.Identities, r.Concurrency)
	if r.BinaryStartupMs > 0 {
		fmt.Fprintf(tw, "taskd start-up (exec → RUNNING, empty embedded etcd)\t%.0f ms\n", r.BinaryStartupMs)
	}
	fmt.Fprintf(tw, "in-process start-up (embedded etcd → RUNNING)\t%.0f ms\n", r.StartupMs)
	fmt.Fprintf(tw, "etcd raw Put\t%.0f /s\n", r.EtcdPutPerSec)
	fmt.Fprintf(tw, "schedule\t%.0f tasks/s\t(%.2f × etcd Put)\n", r.ScheduleTasksPerS, r.ScheduleRatio)
	fmt.Fprintf(tw, "end-to-end (schedule+run+commit)\t%.0f tasks/s\t(%.2f × etcd Put)\n", r.E2ETasksPerSec, r.E2ERatio)
	fmt.Fprintf(tw, "etcd writes per task\t%.1f\n", r.EtcdWritesPerTask)
	fmt.Fprintf(tw, "run start − due time\tp50 %.1f ms, p99 %.1f ms, max %.1f ms\n", r.FireLagP50Ms, r.FireLagP99Ms, r.FireLagMaxMs)
	if rr := r.Relocation; rr != nil {
		if rr.Moves > 0 {
			fmt.Fprintf(tw, "handoff (MoveIdentity → first run on new owner)\tp50 %.1f ms, p99 %.1f ms over %d moves\n", rr.HandoffP50Ms, rr.HandoffP99Ms, rr.Moves)
		}
		if rr.ReassignIDs > 0 {
			fmt.Fprintf(tw, "reassign identities of a dead node\t%d: all mapped in %.0f ms, all loaded in %.0f ms\n", rr.ReassignIDs, rr.ReassignMappedMs, rr.ReassignLoadedMs)
		}
		if rr.FailoverMs > 0 {
			fmt.Fprintf(tw, "failover (SIGKILL → first run on survivor)\t%.0f ms at --lease-ttl 10s\n", rr.FailoverMs)
		}
		if rr.FailoverTTL2sMs > 0 {
			fmt.Fprintf(tw, "failover (SIGKILL → first run on survivor)\t%.0f ms at --lease-ttl 2s\n", rr.FailoverTTL2sMs)
		}
	}
	_ = tw.Flush()
}

// runRelocation measures handoff, reassignment and failover on the bench's
// etcd (each under its own key prefix).
func runRelocation(ctx context.Context, o options, etcdURL string, res *Results) error {
	rr := &RelocationResults{}
	res.Relocation = rr
	if o.moves > 0 {
		lat, err := measureMoves(ctx, etcdURL, o.moves)
		if err != nil {
			return fmt.Errorf("moves: %w", err)
		}
		rr.Moves, rr.HandoffP50Ms, rr.HandoffP99Ms = len(lat), ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99))
		res.HandoffP99Ms = rr.HandoffP99Ms
	}
	if o.reassign > 0 {
		mapped, loaded, err := measureReassign(ctx, etcdURL, o.reassign)
		if err != nil {
			return fmt.Errorf("reassign: %w", err)
		}
		rr.ReassignIDs, rr.ReassignMappedMs, rr.ReassignLoadedMs = o.reassign, ms(mapped), ms(loaded)
	}
	if o.taskd != "" && o.failover != "" {
		rr.FailoverLeaseTTLs = o.failover
		for _, f := range strings.Split(o.failover, ",") {
			ttl, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("-failover %q: %w", f, err)
			}
			d, err := measureFailover(ctx, o.taskd, etcdURL, ttl)
			if err != nil {
				return fmt.Errorf("failover at %s: %w", ttl, err)
			}
			switch ttl {
			case 2 * time.Second:
				rr.FailoverTTL2sMs = ms(d)
			default:
				rr.FailoverMs = ms(d)
				res.FailoverMs = ms(d)
			}
		}
	}
	return nil
}

func run(o options) (*Results, error) {
	dir, err := os.MkdirTemp("", "taskbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	res := &Results{Tasks: o.tasks, Identities: o.identities, Concurrency: o.concurrency, Machine: machine()}
	if o.taskd != "" {
		d, err := measureStartup(o.taskd)
		if err != nil {
			return nil, err
		}
		res.BinaryStartupMs = ms(d)
	}

	began := time.Now()
	ctx := context.Background()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	cli, err := taskservice.DialEtcd([]string{srv.ClientURL()})
	if err != nil {
		return nil, err
	}
	defer cli.Close()

	var (
		done    atomic.Int64
		allDone = make(chan struct{})
		lagMu   sync.Mutex
		lags    []time.Duration
	)
	noop := taskservice.HandlerFunc(func(ctx context.Context, r *taskservice.Run) error {
		lag := time.Since(r.FireTime)
		lagMu.Lock()
		lags = append(lags, lag)
		lagMu.Unlock()
		return nil
	})
	listener := func(ev taskservice.Event) {
		if ev.Type == taskservice.EventSucceeded && done.Add(1) == int64(o.tasks) {
			close(allDone)
		}
	}
	node, err := taskservice.New(taskservice.Config{
		Name: "bench", Client: cli, Handlers: map[string]taskservice.Handler{"noop": noop},
		Listeners: []taskservice.Listener{listener}, Workers: cmp.Or(o.workers, o.concurrency),
	})
	if err != nil {
		return nil, err
	}
	if err := node.Start(ctx); err != nil {
		return nil, err
	}
	defer node.Stop(context.Background())
	res.StartupMs = ms(time.Since(began))

	// etcd's own limit: single-key Puts of a task-sized value.
	value := string(make([]byte, 256))
	puts, err := parallel(o.tasks, o.concurrency, func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := cli.Put(cctx, fmt.Sprintf("/bench/raw/%08d", i), value)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("raw put: %w", err)
	}
	res.EtcdPutPerSec = float64(o.tasks) / puts.Seconds()

	revBefore, err := cli.Get(ctx, "/bench/none")
	if err != nil {
		return nil, err
	}
	start := time.Now()
	sched, err := parallel(o.tasks, o.concurrency, func(i int) error {
		spec := &taskdv1.TaskSpec{
			Identity: fmt.Sprintf("id-%05d", i%o.identities), Kind: "noop",
			Scope:    taskdv1.Scope_SCOPE_IDENTITY,
			Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}},
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := node.Schedule(cctx, []*taskdv1.TaskSpec{spec}, "task")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	res.ScheduleTasksPerS = float64(o.tasks) / sched.Seconds()
	select {
	case <-allDone:
	case <-time.After(10 * time.Minute):
		return nil, fmt.Errorf("only %d of %d tasks finished in 10 minutes", done.Load(), o.tasks)
	}
	e2e := time.Since(start)
	res.E2ETasksPerSec = float64(o.tasks) / e2e.Seconds()
	res.E2ERatio = res.E2ETasksPerSec / res.EtcdPutPerSec
	res.ScheduleRatio = res.ScheduleTasksPerS / res.EtcdPutPerSec
	revAfter, err := cli.Get(ctx, "/bench/none")
	if err != nil {
		return nil, err
	}
	res.EtcdWritesPerTask = float64(revAfter.Header.Revision-revBefore.Header.Revision) / float64(o.tasks)
	if err := runRelocation(ctx, o, srv.ClientURL(), res); err != nil {
		return nil, err
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	if len(lags) > 0 {
		res.FireLagP50Ms = ms(lags[len(lags)/2])
		res.FireLagP99Ms = ms(lags[len(lags)*99/100])
		res.FireLagMaxMs = ms(lags[len(lags)-1])
	}
	return res, nil
}

// parallel runs f(0..n-1) on c goroutines and returns the elapsed time.
func parallel(n, c int, f func(i int) error) (time.Duration, error) {
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || firstErr.Load() != nil {
					return
				}
				if err := f(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s, %d CPUs", host, numCPU())
}

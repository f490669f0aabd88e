// Command taskbench measures taskd on this machine against etcd's own raw
// throughput, measured in the same run, against the same etcd, at the same
// concurrency. It prints a table (or JSON with -o json) and writes the JSON
// to -out.
//
// By default it starts an embedded etcd (fsync on, as in production) in a
// temporary directory; -etcd uses an external cluster instead. Each
// scenario runs fresh in-process nodes under its own key prefix:
//
//   - etcd raw Put and Txn (two compares, two puts) throughput;
//   - schedule throughput, one task per call and batches of 100;
//   - end-to-end throughput (scheduled, run and committed) of no-op durable
//     one-shot tasks for 1, 100 and 10,000 identities;
//   - fire lag (run start − due time) for 10,000 tasks due in the same
//     second, and at a steady 1,000 tasks/s;
//   - fairness: one identity with 50,000 tasks due at one instant while
//     100 other identities have tasks due over the burst: their lateness,
//     and the hot identity's throughput;
//   - heap per pending task on a node that loaded them, and etcd bytes per
//     task;
//   - handoff latency, reassignment of a dead node's identities, failover
//     (with -taskd: real processes killed with SIGKILL), start-up time.
//
// -long runs the scale version: 1,000,000 pending tasks for 100,000
// identities for the memory figure, and 100,000 tasks for throughput.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/taskd/taskd/pkg/etcdembed"
	"github.com/taskd/taskd/pkg/taskservice"
)

type options struct {
	tasks       int
	concurrency int
	long        bool
	etcd        string
	output      string
	out         string
	taskd       string
	moves       int
	reassign    int
	failover    string
	memTasks    int
	memIDs      int
	cpuprofile  string
	memprofile  string
	skip        string
	nodes       int
	scale       string
	fairHot     int
}

// Results are the figures of one run. The top-level numeric keys are the
// baseline that later runs are compared with.
type Results struct {
	Machine     string `json:"machine"`
	Go          string `json:"go"`
	Date        string `json:"date"`
	Tasks       int    `json:"tasks"`
	Concurrency int    `json:"concurrency"`
	// LookAheadMs is the in-process nodes' look-ahead (-look-ahead).
	LookAheadMs float64 `json:"look_ahead_ms"`
	// ColdAfterS is the in-process nodes' --cold-after (-cold-after).
	ColdAfterS float64 `json:"cold_after_s"`

	EtcdPutPerSec float64 `json:"etcd_put_per_sec"`
	EtcdTxnPerSec float64 `json:"etcd_txn_per_sec"`

	ScheduleTasksPerSec      float64 `json:"schedule_tasks_per_sec"`
	ScheduleBatchTasksPerSec float64 `json:"schedule_batch_tasks_per_sec"`
	ScheduleRatio            float64 `json:"schedule_ratio"`
	ScheduleBatchRatio       float64 `json:"schedule_batch_ratio"`

	E2ETasksPerSec float64     `json:"e2e_tasks_per_sec"` // at 100 identities
	E2ERatio       float64     `json:"e2e_ratio"`
	E2ETxnRatio    float64     `json:"e2e_txn_ratio"`
	E2E            []e2eResult `json:"e2e"`

	FireLagP50Ms float64   `json:"fire_lag_p50_ms"` // steady 1,000 tasks/s
	FireLagP99Ms float64   `json:"fire_lag_p99_ms"`
	FireLagMaxMs float64   `json:"fire_lag_max_ms"`
	SteadyLag    lagResult `json:"fire_lag_steady"`
	BurstLag     lagResult `json:"fire_lag_burst"`
	// CronLag: 1,000 cron tasks firing every second (1,000 runs/s).
	CronLag lagResult `json:"fire_lag_cron"`
	// PerSecondLag: the same with periodic triggers of one second.
	PerSecondLag lagResult `json:"fire_lag_periodic_1s"`
	// Fairness: a hot identity's backlog against 100 cold identities.
	Fairness *fairnessResult `json:"fairness,omitempty"`

	HeapBytesPerTask float64 `json:"heap_bytes_per_task"`
	// HeapBytesPerCronTask is the same figure for tasks with a cron trigger.
	HeapBytesPerCronTask float64 `json:"heap_bytes_per_cron_task"`
	// HeapBytesPerPeriodicTask is the same for a periodic trigger.
	HeapBytesPerPeriodicTask float64 `json:"heap_bytes_per_periodic_task"`
	EtcdBytesPerTask         float64 `json:"etcd_bytes_per_task"`
	PendingLoaded            int     `json:"pending_tasks_loaded"`
	LoadMs                   float64 `json:"pending_load_ms"`

	HandoffP99Ms    float64            `json:"handoff_p99_ms"`
	FailoverMs      float64            `json:"failover_ms"`
	StartupMs       float64            `json:"startup_ms,omitempty"`
	Relocation      *RelocationResults `json:"relocation,omitempty"`
	Scale           []ScaleResult      `json:"scale,omitempty"`
	ElapsedSeconds  float64            `json:"elapsed_seconds"`
	ScenariosFailed []string           `json:"scenarios_failed,omitempty"`
}

func main() {
	var o options
	flag.IntVar(&o.tasks, "tasks", 10000, "tasks per throughput scenario")
	flag.IntVar(&o.concurrency, "concurrency", 64, "concurrent clients (also for etcd's raw Put and Txn)")
	flag.DurationVar(&lookAhead, "look-ahead", time.Second, "the in-process nodes' look-ahead (taskd --look-ahead; 0 = none)")
	flag.DurationVar(&coldAfter, "cold-after", 2*time.Minute, "the in-process nodes' --cold-after (0 = every waiting task keeps its record)")
	flag.BoolVar(&o.long, "long", false, "scale run: 1,000,000 pending tasks for 100,000 identities, 100,000 tasks per throughput scenario and for the fairness scenario's hot identity")
	flag.StringVar(&o.etcd, "etcd", "", "external etcd endpoint (default: an embedded etcd in a temporary directory)")
	flag.StringVar(&o.output, "o", "table", "output: table or json")
	flag.StringVar(&o.out, "out", "", "also write the JSON results to this file")
	flag.StringVar(&o.taskd, "taskd", "", "taskd binary: time its start and failover with real processes")
	flag.IntVar(&o.moves, "moves", 100, "MoveIdentity calls to time (0 skips)")
	flag.IntVar(&o.reassign, "reassign", 10000, "identities of a dead node to reassign (0 skips)")
	flag.StringVar(&o.failover, "failover", "10s,2s", "lease TTLs at which to time failover (needs -taskd; empty skips)")
	flag.IntVar(&o.memTasks, "mem-tasks", 20000, "pending tasks to load for the memory figure")
	flag.IntVar(&o.memIDs, "mem-identities", 2000, "identities of those pending tasks")
	flag.IntVar(&o.nodes, "nodes", 1, "in-process nodes sharing the end-to-end scenarios' work")
	flag.StringVar(&o.skip, "skip", "", "comma-separated scenarios to skip: schedule,e2e,lag,fairness,memory,memory-triggers (the periodic and cron memory figures),relocation")
	flag.IntVar(&o.fairHot, "fairness-tasks", 50000, "tasks of the hot identity in the fairness scenario")
	flag.StringVar(&o.scale, "scale", "", "scale scenario: `NODES[,NODES...]xIDENTITIES` in-process nodes sharing that many identities, then one dies (e.g. 2,5,10x100000)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file, and the memory scenario's loading node's to FILE.load")
	flag.StringVar(&o.memprofile, "memprofile", "", "write a heap profile of the node loaded by the memory scenario (one-shot tasks) to this file")
	peers := flag.Bool("peers", false, "compare taskd with River, asynq and go-etcd-cron (see -peers-dir); writes -out")
	peersDir := flag.String("peers-dir", "bench/peers", "the peers' Go modules (-peers)")
	peersOnly := flag.String("peers-only", "", "comma-separated peers to run (-peers): river,asynq,go-etcd-cron (default all)")
	peersJobs := flag.Int("peers-jobs", 20000, "jobs per throughput figure (-peers)")
	peersBurst := flag.Int("peers-burst", 10000, "jobs due at one instant (-peers; 0 skips)")
	peersPeriodic := flag.Int("peers-periodic", 10000, "periodic jobs of one second (-peers; 0 skips)")
	memChild := flag.String("memory-child", "", "internal: load the memory scenario's tasks from this etcd and report the heap")
	memPrefix := flag.String("memory-prefix", "", "internal: the memory scenario's key prefix")
	memChildProfile := flag.String("memory-child-profile", "", "internal: the memory child's heap profile")
	memChildCPU := flag.String("memory-child-cpuprofile", "", "internal: the memory child's CPU profile of the load")
	flag.Parse()
	if *memChild != "" {
		if err := memoryChild(*memChild, *memPrefix, *memChildProfile, *memChildCPU); err != nil {
			fmt.Fprintln(os.Stderr, "taskbench memory child:", err)
			os.Exit(1)
		}
		return
	}
	if *peers {
		po := peerOptions{dir: *peersDir, only: map[string]bool{}, jobs: *peersJobs, burst: *peersBurst,
			periodic: *peersPeriodic, concurrency: o.concurrency, out: o.out}
		for _, p := range strings.Split(*peersOnly, ",") {
			if p = strings.TrimSpace(p); p != "" {
				po.only[p] = true
			}
		}
		if err := runPeers(po); err != nil {
			fmt.Fprintln(os.Stderr, "taskbench -peers:", err)
			os.Exit(1)
		}
		return
	}
	if o.long {
		o.tasks, o.memTasks, o.memIDs, o.fairHot = 100000, 1000000, 100000, 100000
	}
	if err := mainErr(o); err != nil {
		fmt.Fprintln(os.Stderr, "taskbench:", err)
		os.Exit(1)
	}
}

func mainErr(o options) error {
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	res, err := run(o)
	if err != nil {
		return err
	}
	if o.out != "" {
		if err := writeJSON(o.out, res); err != nil {
			return err
		}
	}
	if o.output == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printTable(os.Stdout, res)
	if len(res.ScenariosFailed) > 0 {
		return fmt.Errorf("scenarios failed: %s", strings.Join(res.ScenariosFailed, "; "))
	}
	return nil
}

func run(o options) (*Results, error) {
	began := time.Now()
	ctx := context.Background()
	res := &Results{Tasks: o.tasks, Concurrency: o.concurrency, LookAheadMs: ms(lookAhead), ColdAfterS: coldAfter.Seconds(), Machine: machine(), Go: runtime.Version(),
		Date: time.Now().UTC().Format(time.RFC3339)}
	skip := map[string]bool{}
	for _, s := range strings.Split(o.skip, ",") {
		skip[strings.TrimSpace(s)] = true
	}
	if o.taskd != "" {
		d, err := measureStartup(o.taskd)
		if err != nil {
			return nil, err
		}
		res.StartupMs = ms(d)
	}
	endpoint := o.etcd
	if endpoint == "" {
		dir, err := os.MkdirTemp("", "taskbench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"})
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		endpoint = srv.ClientURL()
	}
	cli, err := taskservice.DialEtcd([]string{endpoint})
	if err != nil {
		return nil, err
	}
	defer cli.Close()

	// etcd's own limit, measured twice (before and after taskd's scenarios)
	// and averaged, since a 2-core machine drifts over a minute.
	put1, err := rawPut(ctx, cli, o.tasks, o.concurrency, "a")
	if err != nil {
		return nil, err
	}
	if res.EtcdTxnPerSec, err = rawTxn(ctx, cli, o.tasks, o.concurrency); err != nil {
		return nil, err
	}
	fail := func(name string, err error) {
		res.ScenariosFailed = append(res.ScenariosFailed, name+": "+err.Error())
	}
	// Memory first, while the process holds nothing else of taskd's.
	if !skip["memory"] {
		heap, db, load, err := measureMemory(ctx, endpoint, "/bench-memory/", onceIn(24*time.Hour), o.memTasks, o.memIDs, o.concurrency/8+1, o.memprofile, o.cpuprofile)
		if err != nil {
			fail("memory", err)
		} else {
			res.HeapBytesPerTask, res.EtcdBytesPerTask, res.PendingLoaded, res.LoadMs = heap, db, o.memTasks, ms(load)
		}
	}
	if !skip["memory"] && !skip["memory-triggers"] {
		if res.HeapBytesPerCronTask, _, _, err = measureMemory(ctx, endpoint, "/bench-memory-cron/", dailyCron, o.memTasks, o.memIDs, o.concurrency/8+1, "", ""); err != nil {
			fail("memory cron", err)
		}
		if res.HeapBytesPerPeriodicTask, _, _, err = measureMemory(ctx, endpoint, "/bench-memory-periodic/", daily, o.memTasks, o.memIDs, o.concurrency/8+1, "", ""); err != nil {
			fail("memory periodic", err)
		}
	}
	if !skip["schedule"] {
		if res.ScheduleTasksPerSec, err = measureSchedule(ctx, endpoint, "/bench-sched1/", o.tasks, 100, 1, o.concurrency); err != nil {
			fail("schedule", err)
		}
		if res.ScheduleBatchTasksPerSec, err = measureSchedule(ctx, endpoint, "/bench-sched100/", o.tasks, 100, 100, o.concurrency/8+1); err != nil {
			fail("schedule batch", err)
		}
	}
	if !skip["e2e"] {
		for _, ids := range []int{1, 100, 10000} {
			n := o.tasks
			if ids == 1 {
				n = o.tasks / 10 // one identity's runs start one after another
			}
			r, err := measureE2E(ctx, cli, endpoint, fmt.Sprintf("/bench-e2e-%d/", ids), n, ids, o.concurrency, o.nodes)
			if err != nil {
				fail(fmt.Sprintf("e2e %d identities", ids), err)
				continue
			}
			res.E2E = append(res.E2E, r)
			if ids == 100 {
				res.E2ETasksPerSec = r.TasksPerSec
			}
		}
	}
	if !skip["lag"] {
		if res.BurstLag, err = measureBurstLag(ctx, endpoint, 10000, 1000, o.concurrency/8+1); err != nil {
			fail("burst lag", err)
		}
		if res.SteadyLag, err = measureSteadyLag(ctx, endpoint, 1000, 5*time.Second, 1000); err != nil {
			fail("steady lag", err)
		}
		res.FireLagP50Ms, res.FireLagP99Ms, res.FireLagMaxMs = res.SteadyLag.P50Ms, res.SteadyLag.P99Ms, res.SteadyLag.MaxMs
		if res.CronLag, err = measureCronLag(ctx, endpoint, 1000, 5); err != nil {
			fail("cron lag", err)
		}
		if res.PerSecondLag, err = measurePeriodicSecondLag(ctx, endpoint, 1000, 5); err != nil {
			fail("periodic 1s lag", err)
		}
	}
	if !skip["fairness"] {
		f, err := measureFairness(ctx, endpoint, o.fairHot, 100, 10, 10*time.Second, o.concurrency/8+1)
		if err != nil {
			fail("fairness", err)
		} else {
			res.Fairness = &f
		}
	}
	put2, err := rawPut(ctx, cli, o.tasks, o.concurrency, "b")
	if err != nil {
		return nil, err
	}
	res.EtcdPutPerSec = (put1 + put2) / 2
	ratio := func(x float64) float64 { return x / res.EtcdPutPerSec }
	res.ScheduleRatio, res.ScheduleBatchRatio = ratio(res.ScheduleTasksPerSec), ratio(res.ScheduleBatchTasksPerSec)
	res.E2ERatio, res.E2ETxnRatio = ratio(res.E2ETasksPerSec), res.E2ETasksPerSec/res.EtcdTxnPerSec
	for i := range res.E2E {
		res.E2E[i].Ratio = ratio(res.E2E[i].TasksPerSec)
	}
	if res.Fairness != nil {
		res.Fairness.HotRatio = ratio(res.Fairness.HotTasksPerSec)
	}
	if !skip["relocation"] {
		if err := runRelocation(ctx, o, endpoint, res); err != nil {
			fail("relocation", err)
		}
	}
	if o.scale != "" {
		counts, ids, err := parseScale(o.scale)
		if err != nil {
			return nil, err
		}
		for _, n := range counts {
			r, err := measureScale(ctx, endpoint, fmt.Sprintf("/bench-scale-%d/", n), n, ids, true)
			if err != nil {
				fail(fmt.Sprintf("scale %d nodes", n), err)
				continue
			}
			res.Scale = append(res.Scale, r)
		}
	}
	res.ElapsedSeconds = time.Since(began).Seconds()
	return res, nil
}

// runRelocation measures handoff, reassignment and failover (each under
// its own key prefix).
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
			if ttl == 2*time.Second {
				rr.FailoverTTL2sMs = ms(d)
			} else {
				rr.FailoverMs, res.FailoverMs = ms(d), ms(d)
			}
		}
	}
	return nil
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
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, a...)...) }
	row("machine", "%s, %s, %s", r.Machine, r.Go, r.Date)
	row("concurrency", "%d clients; %d tasks per scenario; look-ahead %.0f ms", r.Concurrency, r.Tasks, r.LookAheadMs)
	row("etcd raw Put", "%.0f /s", r.EtcdPutPerSec)
	row("etcd raw Txn (2 compares, 2 puts)", "%.0f /s", r.EtcdTxnPerSec)
	if r.ScheduleTasksPerSec > 0 {
		row("schedule, 1 task per call", "%.0f tasks/s\t%.2f × Put", r.ScheduleTasksPerSec, r.ScheduleRatio)
		row("schedule, 100 tasks per call", "%.0f tasks/s\t%.2f × Put", r.ScheduleBatchTasksPerSec, r.ScheduleBatchRatio)
	}
	for _, e := range r.E2E {
		row(fmt.Sprintf("end-to-end, %d identities, %d node(s)", e.Identities, e.Nodes), "%.0f tasks/s\t%.2f × Put\t(%d tasks, %.2f etcd revisions per task)",
			e.TasksPerSec, e.Ratio, e.Tasks, e.Revisions)
	}
	if r.SteadyLag.Tasks > 0 {
		row("fire lag, 10,000 due in one second", "p50 %.1f ms, p99 %.1f ms, max %.1f ms", r.BurstLag.P50Ms, r.BurstLag.P99Ms, r.BurstLag.MaxMs)
		row("fire lag, steady 1,000 tasks/s", "p50 %.1f ms, p99 %.1f ms, max %.1f ms", r.SteadyLag.P50Ms, r.SteadyLag.P99Ms, r.SteadyLag.MaxMs)
	}
	if r.PerSecondLag.Tasks > 0 {
		row("fire lag, 1,000 periodic 1s tasks on whole seconds", "p50 %.1f ms, p99 %.1f ms, max %.1f ms\t(%d runs)", r.PerSecondLag.P50Ms, r.PerSecondLag.P99Ms, r.PerSecondLag.MaxMs, r.PerSecondLag.Tasks)
	}
	if r.CronLag.Tasks > 0 {
		row("fire lag, 1,000 cron tasks every second", "p50 %.1f ms, p99 %.1f ms, max %.1f ms\t(%d runs)", r.CronLag.P50Ms, r.CronLag.P99Ms, r.CronLag.MaxMs, r.CronLag.Tasks)
	}
	if f := r.Fairness; f != nil {
		row(fmt.Sprintf("fairness: %d cold identities' runs during %d due runs of one identity", f.ColdIdentities, f.HotTasks),
			"lateness p50 %.1f ms, p99 %.1f ms, max %.1f ms\t(%d of %d runs due during the burst)", f.ColdP50Ms, f.ColdP99Ms, f.ColdMaxMs, f.ColdDuringBurst, f.ColdTasks)
		row("fairness: the hot identity's runs", "%.0f tasks/s\t%.2f × Put\t(%d in %.1f s)", f.HotTasksPerSec, f.HotRatio, f.HotTasks, f.HotSeconds)
	}
	if r.PendingLoaded > 0 {
		row("heap per pending task", "%.0f bytes\t(%d tasks loaded in %.0f ms)", r.HeapBytesPerTask, r.PendingLoaded, r.LoadMs)
		row("heap per pending periodic / cron task", "%.0f / %.0f bytes", r.HeapBytesPerPeriodicTask, r.HeapBytesPerCronTask)
		row("etcd bytes per task", "%.0f bytes", r.EtcdBytesPerTask)
	}
	if r.StartupMs > 0 {
		row("taskd start-up (exec → RUNNING, empty embedded etcd)", "%.0f ms", r.StartupMs)
	}
	if rr := r.Relocation; rr != nil {
		if rr.Moves > 0 {
			row("handoff (MoveIdentity → first run on new owner)", "p50 %.1f ms, p99 %.1f ms\t(%d moves)", rr.HandoffP50Ms, rr.HandoffP99Ms, rr.Moves)
		}
		if rr.ReassignIDs > 0 {
			row("reassign a dead node's identities", "%d: all mapped in %.0f ms, all loaded in %.0f ms", rr.ReassignIDs, rr.ReassignMappedMs, rr.ReassignLoadedMs)
		}
		if rr.FailoverMs > 0 {
			row("failover (SIGKILL → first run on survivor)", "%.0f ms at --lease-ttl 10s", rr.FailoverMs)
		}
		if rr.FailoverTTL2sMs > 0 {
			row("failover (SIGKILL → first run on survivor)", "%.0f ms at --lease-ttl 2s", rr.FailoverTTL2sMs)
		}
	}
	row("elapsed", "%.0f s", r.ElapsedSeconds)
	if len(r.Scale) > 0 {
		tw.Flush()
		fmt.Fprintf(w, "\nscale: in-process nodes sharing identities (one pending task each); the node holding the most dies\n%s", writeScale(r.Scale))
	}
	for _, f := range r.ScenariosFailed {
		row("FAILED", "%s", f)
	}
	_ = tw.Flush()
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
	return fmt.Sprintf("%s, %d CPUs", host, runtime.NumCPU())
}

package main

// taskbench -peers: taskd measured beside River, asynq and go-etcd-cron on
// this machine in one run. Each peer is a command in its own Go module
// under bench/peers/<peer> (so its dependencies, etcd 3.5 among them, stay
// out of taskd's module); this file builds them, starts and stops their
// stores (PostgreSQL, Redis, etcd 3.5), measures etcd's raw Put rate on a
// fresh embedded etcd right before each run, runs the peer, then taskd's
// same workloads, and prints one table of ratios taskd ÷ peer.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/etcdembed"
	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// peerOptions are the -peers run's settings.
type peerOptions struct {
	dir         string // bench/peers
	only        map[string]bool
	jobs        int
	burst       int
	periodic    int
	concurrency int
	out         string
}

// PeerResults is what -peers writes to bench/results/peers.json.
type PeerResults struct {
	Machine        string       `json:"machine"`
	Go             string       `json:"go"`
	Date           string       `json:"date"`
	Jobs           int          `json:"jobs_per_throughput_figure"`
	Burst          int          `json:"burst_jobs"`
	Periodic       int          `json:"periodic_jobs"`
	Concurrency    int          `json:"concurrency"`
	Method         string       `json:"method"`
	Runs           []peerRun    `json:"runs"`
	Comparisons    []comparison `json:"comparisons"`
	ElapsedSeconds float64      `json:"elapsed_seconds"`
}

const peerMethod = "Each peer's run is followed by taskd's run of the figures it is compared on; each run (a peer's, then taskd's) is preceded by etcd's raw Put rate (64 goroutines, 256-byte values) " +
	"on a fresh embedded etcd 3.7 with fsync on, in this process. Rates are compared as (taskd ÷ its Put reference) ÷ " +
	"(peer ÷ its Put reference); burst lateness (start − due, 10,000 jobs due at one instant) as taskd's p99 ÷ the peer's p99. " +
	"Every store runs with fsync on: PostgreSQL fsync=on and synchronous_commit=on, Redis appendonly with appendfsync always " +
	"(everysec only in the line labelled so), etcd with its default fsync."

func runPeers(o peerOptions) error {
	began := time.Now()
	ctx := context.Background()
	res := &PeerResults{Machine: machine(), Go: runtime.Version(), Date: time.Now().UTC().Format(time.RFC3339),
		Jobs: o.jobs, Burst: o.burst, Periodic: o.periodic, Concurrency: o.concurrency, Method: peerMethod}
	tmp, err := os.MkdirTemp("", "taskbench-peers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil { // PostgreSQL's user enters it
		return err
	}
	want := func(p string) bool { return len(o.only) == 0 || o.only[p] }
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "taskbench -peers: "+format+"\n", a...) }

	pair := func(p peerResult) {
		if strings.HasPrefix(p.Status, "unavailable") {
			logf("%s is %s", p.Peer, p.Status)
			res.Runs = append(res.Runs, peerRun{Peer: p, Taskd: peerResult{Peer: "taskd", Status: "not run: the peer is unavailable"}})
			return
		}
		logf("taskd, for the %s lines", p.Peer)
		res.Runs = append(res.Runs, peerRun{Peer: p, Taskd: runTaskd(ctx, o, taskdFiguresFor(p.Peer))})
	}
	if want("river") {
		logf("River")
		pair(runRiver(ctx, o, tmp))
	}
	if want("asynq") {
		logf("asynq, Redis appendfsync always")
		pair(runAsynq(ctx, o, tmp, "always"))
		logf("asynq, Redis appendfsync everysec")
		pair(runAsynq(ctx, o, tmp, "everysec"))
	}
	if want("go-etcd-cron") {
		logf("go-etcd-cron")
		pair(runEtcdCron(ctx, o, tmp))
	}
	res.Comparisons = comparisons(res.Runs)
	res.ElapsedSeconds = time.Since(began).Seconds()
	printPeerTable(os.Stdout, res.Comparisons)
	for _, run := range res.Runs {
		for _, p := range []peerResult{run.Peer, run.Taskd} {
			fmt.Printf("%s %s: %s; store: %s; etcd Put reference %.0f/s\n", p.Peer, p.Version, p.Status, p.Store, p.PutRef)
			for _, f := range p.Figures {
				if f.Name == "etcd35_put" {
					fmt.Printf("  %s: %.0f/s (%s)\n", f.Name, f.PerSec, f.Setting)
				}
			}
			for _, w := range p.Warnings {
				fmt.Printf("  logged: %s\n", w)
			}
		}
	}
	fmt.Printf("elapsed %.0f s\n", res.ElapsedSeconds)
	if o.out != "" {
		if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
			return err
		}
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(o.out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// putRef is etcd's raw Put rate on a fresh embedded etcd (fsync on).
func putRef(ctx context.Context, n, c int) (float64, error) {
	dir, err := os.MkdirTemp("", "taskbench-putref-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		return 0, err
	}
	defer srv.Close()
	cli, err := taskservice.DialEtcd([]string{srv.ClientURL()})
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	return rawPut(ctx, cli, n, c, "ref")
}

// buildPeer builds bench/peers/<name> into dir and returns the binary.
func buildPeer(ctx context.Context, o peerOptions, name, dir string) (string, error) {
	bin := filepath.Join(dir, name+"peer")
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(bctx, "go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(o.dir, name)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %v: %s", cmd.Dir, err, tail(out))
	}
	return bin, nil
}

// runPeer measures the Put reference, then runs the peer's binary and
// reads its JSON.
func runPeer(ctx context.Context, o peerOptions, r *peerResult, bin string, args ...string) {
	ref, err := putRef(ctx, o.jobs, o.concurrency)
	if err != nil {
		r.Status = "failed: etcd Put reference: " + err.Error()
		return
	}
	r.PutRef = ref
	rctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(rctx, bin, args...)
	// The peer's own warnings (River logs a stalled fetch, for one) show
	// as the run goes, and its last words go into a failure's status.
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(os.Stderr, &stderr)
	if err := cmd.Run(); err != nil {
		r.Status = fmt.Sprintf("failed: %v: %s", err, tail(stderr.Bytes()))
		return
	}
	var out struct {
		Version string `json:"version"`
		Store   string `json:"store"`
		Figures []struct {
			peerFigure
			LatenessMs []float64 `json:"lateness_ms"`
		} `json:"figures"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		r.Status = fmt.Sprintf("failed: reading its output: %v: %s", err, tail(stdout.Bytes()))
		return
	}
	r.Version, r.Store, r.Status = out.Version, out.Store, "ok"
	r.Warnings = append(r.Warnings, matchingLines(stderr.Bytes(), "level=ERROR", "level=WARN")...)
	for _, f := range out.Figures {
		pf := f.peerFigure
		if len(f.LatenessMs) > 0 {
			pf.P50Ms, pf.P99Ms = percentileMs(f.LatenessMs, 0.5), percentileMs(f.LatenessMs, 0.99)
			pf.MaxMs = percentileMs(f.LatenessMs, 1)
		}
		r.Figures = append(r.Figures, pf)
	}
}

// matchingLines returns the lines of b that contain any of subs (at most
// 20, each cut to 300 bytes).
func matchingLines(b []byte, subs ...string) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				if len(l) > 300 {
					l = l[:300] + "…"
				}
				out = append(out, strings.TrimSpace(l))
				break
			}
		}
		if len(out) == 20 {
			break
		}
	}
	return out
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return strings.Join(strings.Fields(s), " ")
}

// ---- River on PostgreSQL ----

func runRiver(ctx context.Context, o peerOptions, tmp string) peerResult {
	r := peerResult{Peer: "river"}
	bin, err := buildPeer(ctx, o, "river", tmp)
	if err != nil {
		r.Status = "unavailable: " + err.Error()
		return r
	}
	pg, err := startPostgres(ctx, filepath.Join(tmp, "pg"))
	if err != nil {
		r.Status = "unavailable: " + err.Error()
		return r
	}
	runPeer(ctx, o, &r, bin, "-dsn", pg.dsn, "-jobs", strconv.Itoa(o.jobs), "-burst", strconv.Itoa(o.burst),
		"-concurrency", strconv.Itoa(o.concurrency))
	pg.stop()
	// Statements over 2 s and lock waits over 1 s, which PostgreSQL was
	// told to log.
	log, _ := os.ReadFile(filepath.Join(pg.dir, "log"))
	r.Warnings = append(r.Warnings, matchingLines(log, "duration:", "still waiting", "acquired")...)
	return r
}

// ---- asynq on Redis ----

func runAsynq(ctx context.Context, o peerOptions, tmp, fsync string) peerResult {
	r := peerResult{Peer: "asynq"}
	if fsync != "always" {
		r.Peer = "asynq-" + fsync
	}
	bin, err := buildPeer(ctx, o, "asynq", tmp)
	if err != nil {
		r.Status = "unavailable: " + err.Error()
		return r
	}
	rd, err := startRedis(ctx, filepath.Join(tmp, "redis-"+fsync), fsync)
	if err != nil {
		r.Status = "unavailable: " + err.Error()
		return r
	}
	defer rd.stop()
	args := []string{"-addr", rd.socket, "-jobs", strconv.Itoa(o.jobs), "-burst", strconv.Itoa(o.burst),
		"-concurrency", strconv.Itoa(o.concurrency)}
	if fsync != "always" {
		args = append(args, "-figures", "oneshot")
	}
	runPeer(ctx, o, &r, bin, args...)
	if fsync != "always" {
		for i := range r.Figures {
			r.Figures[i].Name += "_" + fsync
			r.Figures[i].Setting += "; Redis appendfsync " + fsync + " (not durable per task: up to a second of acknowledged work can be lost)"
		}
	}
	return r
}

// ---- go-etcd-cron on etcd 3.5 ----

func runEtcdCron(ctx context.Context, o peerOptions, tmp string) peerResult {
	r := peerResult{Peer: "go-etcd-cron"}
	bin, err := buildPeer(ctx, o, "etcdcron", tmp)
	if err != nil {
		r.Status = "unavailable: " + err.Error()
		return r
	}
	url, stop, err := startEtcd35(ctx, bin, filepath.Join(tmp, "etcd35"))
	if err != nil {
		r.Status = "unavailable: " + err.Error()
		return r
	}
	defer stop()
	runPeer(ctx, o, &r, bin, "-etcd", url, "-jobs", strconv.Itoa(o.jobs), "-burst", strconv.Itoa(o.burst),
		"-periodic", strconv.Itoa(o.periodic), "-concurrency", strconv.Itoa(o.concurrency))
	return r
}

// ---- taskd ----

// runTaskd measures taskd's figures named in want on a fresh embedded etcd
// (fsync on), after its own Put reference.
func runTaskd(ctx context.Context, o peerOptions, want map[string]bool) peerResult {
	r := peerResult{Peer: "taskd", Version: "this checkout", Store: "etcd 3.7 embedded in the same process, fsync on"}
	ref, err := putRef(ctx, o.jobs, o.concurrency)
	if err != nil {
		r.Status = "failed: etcd Put reference: " + err.Error()
		return r
	}
	r.PutRef = ref
	dir, err := os.MkdirTemp("", "taskbench-peers-taskd-")
	if err != nil {
		r.Status = "failed: " + err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		r.Status = "failed: " + err.Error()
		return r
	}
	defer srv.Close()
	endpoint := srv.ClientURL()
	cli, err := taskservice.DialEtcd([]string{endpoint})
	if err != nil {
		r.Status = "failed: " + err.Error()
		return r
	}
	defer cli.Close()
	const ids = 10000
	var fails []string
	if want["oneshot"] {
		if e, err := measureE2E(ctx, cli, endpoint, "/peers-oneshot/", o.jobs, ids, o.concurrency, 1); err != nil {
			fails = append(fails, "oneshot: "+err.Error())
		} else {
			r.Figures = append(r.Figures, peerFigure{Name: "oneshot", Count: o.jobs, Seconds: float64(o.jobs) / e.TasksPerSec, PerSec: e.TasksPerSec,
				Setting: fmt.Sprintf("one ScheduleTask per task (due now) from %d goroutines, %d identities, one node; until each run's result is committed", o.concurrency, ids)})
		}
	}
	const batch = 100
	bc := o.concurrency/8 + 1
	if want["oneshot_batch"] {
		if rate, err := measureE2EBatch(ctx, endpoint, "/peers-batch/", o.jobs, ids, batch, bc); err != nil {
			fails = append(fails, "oneshot_batch: "+err.Error())
		} else {
			r.Figures = append(r.Figures, peerFigure{Name: "oneshot_batch", Count: o.jobs, Seconds: float64(o.jobs) / rate, PerSec: rate,
				Setting: fmt.Sprintf("ScheduleTasks of %d tasks (due now) from %d goroutines, %d identities, one node; until committed", batch, bc, ids)})
		}
	}
	if want["periodic"] && o.periodic > 0 {
		count, window, err := measurePeriodicRate(ctx, endpoint, "/peers-periodic/", o.periodic, 5*time.Second)
		if err != nil {
			fails = append(fails, "periodic: "+err.Error())
		} else {
			r.Figures = append(r.Figures, peerFigure{Name: "periodic", Count: count, Seconds: window.Seconds(), PerSec: float64(count) / window.Seconds(),
				Setting: fmt.Sprintf("%d tasks (one identity each) with a periodic 1s trigger from one whole second (%d runs/s due)", o.periodic, o.periodic)})
		}
	}
	if want["burst"] && o.burst > 0 {
		l, err := measureBurstLag(ctx, endpoint, o.burst, 1000, bc)
		if err != nil {
			fails = append(fails, "burst: "+err.Error())
		} else {
			r.Figures = append(r.Figures, peerFigure{Name: "burst", Count: l.Tasks, P50Ms: l.P50Ms, P99Ms: l.P99Ms, MaxMs: l.MaxMs,
				Setting: "one-shot tasks due at one whole second, scheduled ahead in calls of 100, 1,000 identities, one node"})
		}
	}
	r.Status = "ok"
	if len(fails) > 0 {
		r.Status = "failed: " + strings.Join(fails, "; ")
	}
	return r
}

// measureE2EBatch schedules n no-op one-shot tasks due now for ids
// identities in ScheduleTasks calls of batch, c calls at a time, on a
// fresh node and returns tasks per second from the first call to the last
// commit.
func measureE2EBatch(ctx context.Context, etcdURL, prefix string, n, ids, batch, c int) (float64, error) {
	var done atomic.Int64
	all := make(chan struct{})
	listener := func(ev taskservice.Event) {
		if ev.Type == taskservice.EventSucceeded && done.Add(1) == int64(n) {
			close(all)
		}
	}
	noop := taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil })
	nodes, stop, err := startNodes(ctx, etcdURL, prefix, []string{"batch"}, noop, nodeOptions{listeners: []taskservice.Listener{listener}})
	if err != nil {
		return 0, err
	}
	defer stop()
	began := time.Now()
	calls := (n + batch - 1) / batch
	if _, err := parallel(calls, c, func(k int) error {
		var specs []*taskdv1.TaskSpec
		for i := k * batch; i < (k+1)*batch && i < n; i++ {
			specs = append(specs, oneShot(fmt.Sprintf("e-%06d", i%ids), time.Time{}))
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err := nodes[0].Schedule(cctx, specs)
		return err
	}); err != nil {
		return 0, fmt.Errorf("schedule: %w", err)
	}
	select {
	case <-all:
	case <-time.After(10 * time.Minute):
		return 0, fmt.Errorf("only %d of %d tasks finished in 10 minutes", done.Load(), n)
	}
	return float64(n) / time.Since(began).Seconds(), nil
}

// measurePeriodicRate stores tasks periodic tasks of one second (one
// identity each) from a common whole second ahead and counts the runs
// that start during window, from two seconds after the first fire time.
func measurePeriodicRate(ctx context.Context, etcdURL, prefix string, tasks int, window time.Duration) (int, time.Duration, error) {
	var mu sync.Mutex
	var from, to time.Time
	count := 0
	h := taskservice.HandlerFunc(func(ctx context.Context, r *taskservice.Run) error {
		now := time.Now()
		mu.Lock()
		if !from.IsZero() && !now.Before(from) && now.Before(to) {
			count++
		}
		mu.Unlock()
		return nil
	})
	nodes, stop, err := startNodes(ctx, etcdURL, prefix, []string{"periodic"}, h, nodeOptions{})
	if err != nil {
		return 0, 0, err
	}
	defer stop()
	start := time.Now().Add(6 * time.Second).Truncate(time.Second).Add(time.Second)
	trig := &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
		Start: timestamppb.New(start), Interval: durationpb.New(time.Second)}}}
	if _, err := parallel((tasks+99)/100, 9, func(k int) error {
		var specs []*taskdv1.TaskSpec
		for i := k * 100; i < (k+1)*100 && i < tasks; i++ {
			specs = append(specs, &taskdv1.TaskSpec{Identity: fmt.Sprintf("p-%06d", i), Kind: "tick",
				Scope: taskdv1.Scope_SCOPE_IDENTITY, Triggers: []*taskdv1.Trigger{trig}})
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err := nodes[0].Schedule(cctx, specs)
		return err
	}); err != nil {
		return 0, 0, fmt.Errorf("schedule: %w", err)
	}
	if time.Now().After(start) {
		return 0, 0, errors.New("the periodic tasks were not all stored before their first fire time")
	}
	mu.Lock()
	from, to = start.Add(2*time.Second), start.Add(2*time.Second+window)
	mu.Unlock()
	select {
	case <-time.After(time.Until(to)):
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	mu.Lock()
	defer mu.Unlock()
	return count, window, nil
}

//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// leaseTTL is every taskd's --lease-ttl: etcd's minimum, so that faults
// past the lease are short.
const leaseTTL = 2 * time.Second

// TestChaos runs the workload under the seeded fault schedule, settles,
// and fails if the checker finds any must-be-zero violation (see check).
func TestChaos(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		seed = time.Now().UnixNano() % 1_000_000
	}
	if *flagNodes < 3 || *flagNodes > 5 {
		t.Fatalf("-chaos.nodes %d: want 3-5", *flagNodes)
	}
	t.Logf("chaos seed %d: duration %s, %d faults, %d taskd, %d identities", seed, *flagDuration, *flagFaults, *flagNodes, *flagIdentities)
	dir, err := os.MkdirTemp("", "taskd-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("work directory %s", dir)
	if !*flagKeep {
		// A failed run keeps its logs; etcd's data (hundreds of MB of
		// preallocated WAL) goes either way.
		t.Cleanup(func() {
			if !t.Failed() {
				_ = os.RemoveAll(dir)
				return
			}
			for i := 0; i < 3; i++ {
				_ = os.RemoveAll(filepath.Join(dir, fmt.Sprintf("etcd%d", i)))
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	cluster, err := startCluster(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.close)
	handlerLog := filepath.Join(dir, "handlers.log")
	cfg := nodeConfig{etcd: cluster.endpoints(), handlerLog: handlerLog, dir: dir, txnFaults: *flagTxnFaults, leaseTTL: leaseTTL}
	var nodes []*taskdNode
	for i := 0; i < *flagNodes; i++ {
		n, err := newTaskdNode(fmt.Sprintf("node%d", i), cfg)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		t.Cleanup(func() {
			if err := n.close(); err != nil {
				t.Error(err)
			}
		})
	}
	for _, n := range nodes {
		if _, err := n.launch(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		if err := n.waitRunning(ctx, n.current()); err != nil {
			t.Fatal(err)
		}
	}

	// Workload and faults run together; the workload stops when the last
	// fault is over (or the duration is up, whichever is later).
	work := newWorkload(nodes, *flagIdentities)
	cli, err := clientv3.New(clientv3.Config{Endpoints: cluster.endpoints(), DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// From the cluster's first revision: the nodes' first registrations
	// are history by now, and nothing has been compacted yet.
	watchCtx, stopWatch := context.WithCancel(ctx)
	regs, waitWatch := watchRegistrations(watchCtx, cli, 1)
	defer waitWatch()
	defer stopWatch()
	inj := &injector{
		rng: rand.New(rand.NewPCG(uint64(seed), 1)), cluster: cluster, nodes: nodes, work: work,
		leaseTTL: leaseTTL, counts: map[string]int{}, logf: t.Logf, cli: cli,
	}
	began := time.Now()
	workCtx, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < *flagWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work.run(workCtx, rand.New(rand.NewPCG(uint64(seed), uint64(100+i))), i)
		}()
	}
	inj.run(ctx, *flagFaults, *flagDuration)
	pause(ctx, time.Until(began.Add(*flagDuration)))
	stopWork()
	wg.Wait()
	loadTime := time.Since(began)

	// Settle: every process up, every acknowledged task final, the
	// handler log quiet.
	settleBegan := time.Now()
	var rep *report
	settleCtx, settleCancel := context.WithTimeout(ctx, *flagSettle)
	defer settleCancel()
	var recoveryFailed []finding
	if err := inj.restoreAll(settleCtx); err != nil {
		recoveryFailed = append(recoveryFailed, finding{"processes up for the settle: " + err.Error(), nil})
	}
	acked := work.ledger.snapshot()
	settled := waitSettled(settleCtx, nodes, acked)
	if err := waitQuiet(settleCtx, handlerLog); err != nil {
		recoveryFailed = append(recoveryFailed, finding{"handler log quiet: " + err.Error(), nil})
	}
	settleTime := time.Since(settleBegan)

	data, err := os.ReadFile(handlerLog)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	events, bad := parseHandlerLog(data)
	facts := collect(ctx, nodes, acked, events)
	lifetimes := map[string][]lifetime{}
	for _, n := range nodes {
		for _, p := range n.lifetimes() {
			lifetimes[n.name] = append(lifetimes[n.name], lifetime{start: p.started, end: p.exitTime()})
		}
	}
	inj.mu.Lock()
	pauses := append([]pausePastLease(nil), inj.pauses...)
	inj.mu.Unlock()
	regEnds, watchBroken := regs.snapshot()
	rep = check(checkInput{events: events, badLines: bad, tasks: facts, lifetimes: lifetimes, pauses: pauses, regEnds: regEnds})
	if watchBroken != "" {
		rep.recoveryFailed = append(rep.recoveryFailed, finding{"the watch on the nodes' registrations broke: " + watchBroken, nil})
	}
	inj.mu.Lock()
	for _, f := range inj.failures {
		rep.recoveryFailed = append(rep.recoveryFailed, finding{f, nil})
	}
	inj.mu.Unlock()
	rep.recoveryFailed = append(rep.recoveryFailed, recoveryFailed...)

	var sb strings.Builder
	printReport(&sb, seed, inj, work.ledger, rep, loadTime, settleTime, settled)
	t.Log("\n" + sb.String())
	if rep.failed() {
		t.Errorf("chaos seed %d: violations found (logs kept in %s: handlers.log, taskd-*.log, etcd*.log)", seed, dir)
	}
}

// waitSettled waits until every acknowledged task is in a final state
// (COMPLETED, CANCELED or DEAD; COMPLETED with its last run-now served) or
// ctx ends, asking random nodes; it
// reports whether all settled. The checker reads the states again.
func waitSettled(ctx context.Context, nodes []*taskdNode, acked []*ackedTask) bool {
	open := map[string]*ackedTask{}
	for _, a := range acked {
		open[a.id] = a
	}
	r := rand.New(rand.NewPCG(1, 2))
	err := waitFor(ctx, func(ctx context.Context) error {
		for id, a := range open {
			rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
			resp, err := nodes[r.IntN(len(nodes))].client.GetTask(rctx, &taskdv1.GetTaskRequest{Identity: a.identity, TaskId: id})
			cancel()
			if status.Code(err) == codes.NotFound {
				delete(open, id) // the checker reports it lost
				continue
			}
			if err != nil {
				return err
			}
			switch resp.GetTask().GetState() {
			case taskdv1.TaskState_TASK_STATE_CANCELED, taskdv1.TaskState_TASK_STATE_DEAD:
				delete(open, id)
			case taskdv1.TaskState_TASK_STATE_COMPLETED:
				// A run-now of a completed task leaves it COMPLETED until
				// the manual run starts: wait for that run too.
				if len(a.runNowAcked) > 0 {
					served, err := manualRunServed(ctx, nodes[r.IntN(len(nodes))], a)
					if err != nil {
						return err
					}
					if !served {
						continue
					}
				}
				delete(open, id)
			}
		}
		if len(open) > 0 {
			return fmt.Errorf("%d tasks not final", len(open))
		}
		return nil
	})
	return err == nil
}

// manualRunServed reports whether a committed manual run started after the
// last acknowledged run-now of a was sent.
func manualRunServed(ctx context.Context, n *taskdNode, a *ackedTask) (bool, error) {
	rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := n.client.ListRuns(rctx, &taskdv1.ListRunsRequest{Identity: a.identity, TaskId: a.id})
	if err != nil {
		return false, err
	}
	last := a.runNowAcked[len(a.runNowAcked)-1]
	for _, run := range resp.GetRuns() {
		if run.GetManual() && committedOutcome(run.GetOutcome()) && !run.GetStartedAt().AsTime().Before(last) {
			return true, nil
		}
	}
	return false, nil
}

// waitQuiet waits until the handler log has not grown for two seconds: the
// handlers of runs in flight when the last task settled (a cancelled task's
// last run, a re-execution) have written their lines.
func waitQuiet(ctx context.Context, path string) error {
	var size int64 = -1
	since := time.Now()
	return waitFor(ctx, func(context.Context) error {
		st, err := os.Stat(path)
		cur := int64(0)
		if err == nil {
			cur = st.Size()
		}
		if cur != size {
			size, since = cur, time.Now()
		}
		if time.Since(since) < 2*time.Second {
			return errors.New("the handler log is still growing")
		}
		return nil
	})
}

// collect reads every task that was acknowledged or appears in the
// handler log: its record and its run history.
func collect(ctx context.Context, nodes []*taskdNode, acked []*ackedTask, events []*handlerEvent) map[string]*taskFacts {
	facts := map[string]*taskFacts{}
	for _, a := range acked {
		facts[a.id] = &taskFacts{id: a.id, identity: a.identity, ack: a}
	}
	for _, e := range events {
		if _, ok := facts[e.id]; !ok {
			facts[e.id] = &taskFacts{id: e.id, identity: e.identity}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, f := range facts {
		for attempt := 0; attempt < 5; attempt++ {
			f.err = readTask(ctx, nodes[r.IntN(len(nodes))], f)
			if f.err == nil {
				break
			}
		}
	}
	return facts
}

func readTask(ctx context.Context, n *taskdNode, f *taskFacts) error {
	rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := n.client.GetTask(rctx, &taskdv1.GetTaskRequest{Identity: f.identity, TaskId: f.id})
	if status.Code(err) == codes.NotFound {
		f.notFound = true
		return nil
	}
	if err != nil {
		return err
	}
	runs, err := n.client.ListRuns(rctx, &taskdv1.ListRunsRequest{Identity: f.identity, TaskId: f.id})
	if err != nil {
		return err
	}
	f.task, f.runs = resp.GetTask(), runs.GetRuns()
	return nil
}

// printReport writes the summary table and, for each violation kind found,
// up to five examples with their evidence.
func printReport(sb *strings.Builder, seed int64, inj *injector, l *ledger, rep *report, load, settle time.Duration, settled bool) {
	w := tabwriter.NewWriter(sb, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "chaos report, seed %d\n", seed)
	inj.mu.Lock()
	kinds := make([]string, 0, len(inj.counts))
	total := 0
	for k, c := range inj.counts {
		kinds = append(kinds, k)
		total += c
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "faults injected\t%d\n", total)
	for _, k := range kinds {
		fmt.Fprintf(w, "  %s\t%d\n", k, inj.counts[k])
	}
	inj.mu.Unlock()
	l.mu.Lock()
	runNows, cancels := 0, 0
	for _, t := range l.tasks {
		runNows += len(t.runNowAcked)
		cancels += len(t.cancelAcked)
	}
	errs := make([]string, 0, len(l.rpcErrs))
	for m, c := range l.rpcErrs {
		errs = append(errs, fmt.Sprintf("%s %d", m, c))
	}
	sort.Strings(errs)
	fmt.Fprintf(w, "tasks acknowledged\t%d (one-shot %d, periodic %d); %d given up after retries\n", len(l.tasks), rep.oneShots, rep.periodic, l.scheduleErr)
	fmt.Fprintf(w, "tasks run but never acknowledged\t%d\n", rep.unacked)
	fmt.Fprintf(w, "run-now / cancel acknowledged\t%d / %d\n", runNows, cancels)
	fmt.Fprintf(w, "moves acknowledged / refused or failed\t%d / %d\n", l.moves, l.moveErrs)
	fmt.Fprintf(w, "RPC errors (retried or dropped)\t%s\n", strings.Join(errs, ", "))
	l.mu.Unlock()
	fmt.Fprintf(w, "handler starts / ends\t%d / %d\n", rep.starts, rep.ends)
	fmt.Fprintf(w, "committed runs (history)\t%d\n", rep.committed)
	fmt.Fprintf(w, "re-executions (allowed)\t%d\n", len(rep.reexecutions))
	fmt.Fprintf(w, "handler starts with no end (allowed)\t%d\n", len(rep.unended))
	fmt.Fprintf(w, "handlers that outlived their taskd (listed)\t%d\n", len(rep.outlived))
	fmt.Fprintf(w, "handlers called after a lapsed lease, start written before (listed)\t%d\n", len(rep.spawnedLate))
	inj.mu.Lock()
	fmt.Fprintf(w, "taskd pauses past the lease checked / not checked\t%d / %d\n", len(inj.pauses), inj.unread)
	fmt.Fprintf(w, "registrations ended\t%d\n", rep.regEnds)
	inj.mu.Unlock()
	for _, k := range rep.mustBeZero() {
		fmt.Fprintf(w, "%s (must be 0)\t%d\n", k.name, len(k.list))
	}
	fmt.Fprintf(w, "load time\t%s\n", load.Round(time.Millisecond))
	fmt.Fprintf(w, "time to settle\t%s (all settled: %t)\n", settle.Round(time.Millisecond), settled)
	_ = w.Flush()
	section := func(name string, list []finding, limit int) {
		if len(list) == 0 {
			return
		}
		fmt.Fprintf(sb, "\n== %s: %d (first %d)\n", name, len(list), min(limit, len(list)))
		for _, f := range list[:min(limit, len(list))] {
			fmt.Fprintf(sb, "- %s\n", f.what)
			for _, e := range f.evidence {
				fmt.Fprintf(sb, "    %s\n", e)
			}
		}
	}
	for _, k := range rep.mustBeZero() {
		section(k.name, k.list, 5)
	}
	section("re-executions", rep.reexecutions, 10)
	section("handler starts with no end", rep.unended, 5)
	section("handlers that outlived their taskd", rep.outlived, 5)
	section("handlers called after a lapsed lease, start written before", rep.spawnedLate, 5)
}

package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// rawPut measures etcd's single-key Put throughput with c goroutines.
func rawPut(ctx context.Context, cli *clientv3.Client, n, c int, tag string) (float64, error) {
	value := string(make([]byte, 256))
	d, err := parallel(n, c, func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := cli.Put(cctx, fmt.Sprintf("/bench-raw/%s/%08d", tag, i), value)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("raw put: %w", err)
	}
	return float64(n) / d.Seconds(), nil
}

// rawTxn measures etcd's throughput of the Txn shape of a fenced commit:
// two compares and two puts, with c goroutines.
func rawTxn(ctx context.Context, cli *clientv3.Client, n, c int) (float64, error) {
	value := string(make([]byte, 256))
	w := writepath.NewWriter(cli)
	d, err := parallel(n, c, func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		a, b := fmt.Sprintf("/bench-raw/txn/a%08d", i), fmt.Sprintf("/bench-raw/txn/b%08d", i)
		_, err := w.Commit(cctx, writepath.Txn{If: []clientv3.Cmp{writepath.At(a, 0), writepath.At(b, 0)},
			Then: []clientv3.Op{clientv3.OpPut(a, value), clientv3.OpPut(b, value)}})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("raw txn: %w", err)
	}
	return float64(n) / d.Seconds(), nil
}

func oneShot(id string, at time.Time) *taskdv1.TaskSpec {
	t := &taskdv1.OnceTrigger{}
	if !at.IsZero() {
		t.At = timestamppb.New(at)
	}
	return &taskdv1.TaskSpec{Identity: id, Kind: "tick", Scope: taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: t}}}}
}

// measureSchedule stores n tasks due in a day (so none runs) for ids
// identities, one ScheduleTask per task (batch 1) or ScheduleTasks of
// batch tasks, c calls at a time; it returns tasks per second.
func measureSchedule(ctx context.Context, etcdURL, prefix string, n, ids, batch, c int) (float64, error) {
	noop := taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil })
	nodes, stop, err := startNodes(ctx, etcdURL, prefix, []string{"sched"}, noop, nodeOptions{})
	if err != nil {
		return 0, err
	}
	defer stop()
	later := time.Now().Add(24 * time.Hour)
	calls := (n + batch - 1) / batch
	d, err := parallel(calls, c, func(k int) error {
		var specs []*taskdv1.TaskSpec
		for i := k * batch; i < (k+1)*batch && i < n; i++ {
			specs = append(specs, oneShot(fmt.Sprintf("s-%06d", i%ids), later))
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err := nodes[0].Schedule(cctx, specs)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("schedule: %w", err)
	}
	return float64(n) / d.Seconds(), nil
}

// e2eResult is the end-to-end throughput at one spread of identities.
type e2eResult struct {
	Identities  int     `json:"identities"`
	Nodes       int     `json:"nodes"`
	Tasks       int     `json:"tasks"`
	TasksPerSec float64 `json:"tasks_per_sec"`
	Ratio       float64 `json:"ratio_to_put"`
	Revisions   float64 `json:"etcd_revisions_per_task"`
}

// measureE2E schedules n no-op one-shot tasks due now for ids identities
// (one ScheduleTask each, c at a time) on a fresh node and returns the
// throughput from the first call to the last commit.
func measureE2E(ctx context.Context, cli *clientv3.Client, etcdURL, prefix string, n, ids, c, nodeCount int) (e2eResult, error) {
	var done atomic.Int64
	all := make(chan struct{})
	listener := func(ev taskservice.Event) {
		if ev.Type == taskservice.EventSucceeded && done.Add(1) == int64(n) {
			close(all)
		}
	}
	noop := taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil })
	var names []string
	for i := range max(nodeCount, 1) {
		names = append(names, fmt.Sprintf("e2e-%d", i))
	}
	nodes, stop, err := startNodes(ctx, etcdURL, prefix, names, noop, nodeOptions{listeners: []taskservice.Listener{listener}})
	if err != nil {
		return e2eResult{}, err
	}
	defer stop()
	revBefore, err := cli.Get(ctx, "/bench-none")
	if err != nil {
		return e2eResult{}, err
	}
	began := time.Now()
	if _, err := parallel(n, c, func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		// Identity k is always scheduled through node k mod nodes, which
		// maps it on first use: the identities spread over the nodes.
		id := i % ids
		_, err := nodes[id%len(nodes)].Schedule(cctx, []*taskdv1.TaskSpec{oneShot(fmt.Sprintf("e-%06d", id), time.Time{})})
		return err
	}); err != nil {
		return e2eResult{}, fmt.Errorf("schedule: %w", err)
	}
	select {
	case <-all:
	case <-time.After(10 * time.Minute):
		return e2eResult{}, fmt.Errorf("only %d of %d tasks finished in 10 minutes", done.Load(), n)
	}
	d := time.Since(began)
	revAfter, err := cli.Get(ctx, "/bench-none")
	if err != nil {
		return e2eResult{}, err
	}
	return e2eResult{Identities: ids, Nodes: len(nodes), Tasks: n, TasksPerSec: float64(n) / d.Seconds(),
		Revisions: float64(revAfter.Header.Revision-revBefore.Header.Revision) / float64(n)}, nil
}

// lagResult is the lateness of run starts.
type lagResult struct {
	Tasks int     `json:"tasks"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// measureBurstLag schedules n tasks (in batches of 100) all due at the
// same instant, 3 s ahead, and returns run start − due time.
func measureBurstLag(ctx context.Context, etcdURL string, n, ids, c int) (lagResult, error) {
	due := time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
	return measureLag(ctx, etcdURL, "/bench-burst/", n, func(h *lagHarness) error {
		calls := (n + 99) / 100
		_, err := parallel(calls, c, func(k int) error {
			var specs []*taskdv1.TaskSpec
			for i := k * 100; i < (k+1)*100 && i < n; i++ {
				specs = append(specs, oneShot(fmt.Sprintf("b-%06d", i%ids), due))
			}
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			_, err := h.node.Schedule(cctx, specs)
			return err
		})
		return err
	})
}

// measureSteadyLag schedules rate tasks per second for the given time, each
// due 500 ms after it is scheduled, and returns run start − due time.
func measureSteadyLag(ctx context.Context, etcdURL string, rate int, dur time.Duration, ids int) (lagResult, error) {
	n := int(float64(rate) * dur.Seconds())
	return measureLag(ctx, etcdURL, "/bench-steady/", n, func(h *lagHarness) error {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		per := rate / 100 // tasks per 10 ms tick
		var wg sync.WaitGroup
		var firstErr atomic.Value
		for i := 0; i < n; {
			<-tick.C
			var specs []*taskdv1.TaskSpec
			due := time.Now().Add(500 * time.Millisecond)
			for j := 0; j < per && i < n; j, i = j+1, i+1 {
				specs = append(specs, oneShot(fmt.Sprintf("st-%06d", i%ids), due))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				cctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				if _, err := h.node.Schedule(cctx, specs); err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
			}()
		}
		wg.Wait()
		if err, _ := firstErr.Load().(error); err != nil {
			return err
		}
		return nil
	})
}

type lagHarness struct {
	node *taskservice.Node
}

func measureLag(ctx context.Context, etcdURL, prefix string, n int, load func(*lagHarness) error) (lagResult, error) {
	var mu sync.Mutex
	lags := make([]time.Duration, 0, n)
	all := make(chan struct{})
	tick := taskservice.HandlerFunc(func(ctx context.Context, r *taskservice.Run) error {
		lag := time.Since(r.FireTime)
		mu.Lock()
		lags = append(lags, lag)
		if len(lags) == n {
			close(all)
		}
		mu.Unlock()
		return nil
	})
	nodes, stop, err := startNodes(ctx, etcdURL, prefix, []string{"lag"}, tick, nodeOptions{})
	if err != nil {
		return lagResult{}, err
	}
	defer stop()
	if err := load(&lagHarness{node: nodes[0]}); err != nil {
		return lagResult{}, err
	}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		return lagResult{}, fmt.Errorf("only %d of %d runs in 5 minutes", len(lags), n)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	return lagResult{Tasks: n, P50Ms: ms(lags[len(lags)/2]), P99Ms: ms(lags[len(lags)*99/100]), MaxMs: ms(lags[len(lags)-1])}, nil
}

// measureCronLag schedules tasks cron tasks (one identity each) firing
// every second, lets them run, and returns the lateness (run start − fire
// time) of the runs of secs whole seconds after they have all been stored.
func measureCronLag(ctx context.Context, etcdURL string, tasks, secs int) (lagResult, error) {
	return measureSecondlyLag(ctx, etcdURL, "/bench-cron/", tasks, secs, func() *taskdv1.Trigger {
		return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "* * * * * ?"}}}
	})
}

// measurePeriodicSecondLag is measureCronLag with periodic triggers of one
// second on whole seconds: the same load, for comparison.
func measurePeriodicSecondLag(ctx context.Context, etcdURL string, tasks, secs int) (lagResult, error) {
	start := timestamppb.New(time.Now().Truncate(time.Second).Add(time.Second))
	return measureSecondlyLag(ctx, etcdURL, "/bench-persec/", tasks, secs, func() *taskdv1.Trigger {
		return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Start: start, Interval: durationpb.New(time.Second)}}}
	})
}

func measureSecondlyLag(ctx context.Context, etcdURL, prefix string, tasks, secs int, trigger func() *taskdv1.Trigger) (lagResult, error) {
	var mu sync.Mutex
	var from time.Time // fire times from here on are measured
	want := tasks * secs
	lags := make([]time.Duration, 0, want)
	all := make(chan struct{})
	tick := taskservice.HandlerFunc(func(ctx context.Context, r *taskservice.Run) error {
		lag := time.Since(r.FireTime)
		mu.Lock()
		defer mu.Unlock()
		if from.IsZero() || r.FireTime.Before(from) || !r.FireTime.Before(from.Add(time.Duration(secs)*time.Second)) {
			return nil
		}
		lags = append(lags, lag)
		if len(lags) == want {
			close(all)
		}
		return nil
	})
	nodes, stop, err := startNodes(ctx, etcdURL, prefix, []string{"lag"}, tick, nodeOptions{})
	if err != nil {
		return lagResult{}, err
	}
	defer stop()
	for b := 0; b < tasks; b += 100 {
		var specs []*taskdv1.TaskSpec
		for i := b; i < b+100 && i < tasks; i++ {
			specs = append(specs, &taskdv1.TaskSpec{
				Identity: fmt.Sprintf("cron-%05d", i), Kind: "tick", Scope: taskdv1.Scope_SCOPE_IDENTITY,
				Triggers: []*taskdv1.Trigger{trigger()},
			})
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err := nodes[0].Schedule(cctx, specs)
		cancel()
		if err != nil {
			return lagResult{}, err
		}
	}
	mu.Lock()
	from = time.Now().Truncate(time.Second).Add(2 * time.Second)
	mu.Unlock()
	select {
	case <-all:
	case <-time.After(time.Duration(secs)*time.Second + 2*time.Minute):
		mu.Lock()
		defer mu.Unlock()
		return lagResult{}, fmt.Errorf("only %d of %d cron runs", len(lags), want)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	return lagResult{Tasks: want, P50Ms: ms(lags[len(lags)/2]), P99Ms: ms(lags[len(lags)*99/100]), MaxMs: ms(lags[len(lags)-1])}, nil
}

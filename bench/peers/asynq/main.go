// Command asynqpeer measures asynq (a Redis task queue) for taskbench's
// peer comparison: tasks enqueued and processed per second with a no-op
// handler at a concurrency of 64, and the lateness of 10,000 tasks due at
// one instant (ProcessAt). It prints its figures as JSON on stdout. The
// Redis server is started by the caller (taskbench -peers).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/taskd/taskd/bench/peers/peerout"
)

// Version is the asynq release measured (go.mod pins it).
const Version = "v0.26.0"

// Figure and Output are the shared output shape (bench/peers/peerout).
type (
	Figure = peerout.Figure
	Output = peerout.Output
)

func main() {
	network := flag.String("network", "unix", "Redis network: unix or tcp")
	addr := flag.String("addr", "", "Redis address (a socket path for unix)")
	jobs := flag.Int("jobs", 20000, "tasks of the throughput figure")
	burst := flag.Int("burst", 10000, "tasks of the burst (0 skips)")
	conc := flag.Int("concurrency", 64, "server concurrency and enqueuing goroutines")
	figures := flag.String("figures", "oneshot,burst", "figures to measure")
	lead := flag.Duration("lead", 10*time.Second, "how far ahead the burst's due time is (all its tasks must be enqueued by then)")
	flag.Parse()
	if err := run(asynq.RedisClientOpt{Network: *network, Addr: *addr, PoolSize: *conc + 16}, *jobs, *burst, *conc, *lead, *figures); err != nil {
		fmt.Fprintln(os.Stderr, "asynqpeer:", err)
		os.Exit(1)
	}
}

func run(opt asynq.RedisClientOpt, jobs, burst, conc int, lead time.Duration, figures string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Network: opt.Network, Addr: opt.Addr})
	defer rdb.Close()
	info, err := rdb.ConfigGet(ctx, "append*").Result()
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	ver, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	out := Output{Peer: "asynq", Version: Version,
		Store: fmt.Sprintf("Redis %s, appendonly %s, appendfsync %s", field(ver, "redis_version"), info["appendonly"], info["appendfsync"])}
	want := peerout.Wanted(figures)
	if want["oneshot"] {
		f, err := throughput(ctx, opt, jobs, conc)
		if err != nil {
			return fmt.Errorf("oneshot: %w", err)
		}
		out.Figures = append(out.Figures, f)
	}
	if want["burst"] && burst > 0 {
		f, err := burstLateness(ctx, opt, burst, conc, lead)
		if err != nil {
			return fmt.Errorf("burst: %w", err)
		}
		out.Figures = append(out.Figures, f)
	}
	return out.Print()
}

// field reads one "key:value" line of Redis's INFO.
func field(info, key string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+":"); ok {
			return v
		}
	}
	return "?"
}

type recorder struct {
	mu   sync.Mutex
	due  time.Time
	late []float64
}

func (r *recorder) ProcessTask(ctx context.Context, t *asynq.Task) error {
	if r.due.IsZero() {
		return nil
	}
	l := float64(time.Since(r.due).Microseconds()) / 1000
	r.mu.Lock()
	r.late = append(r.late, l)
	r.mu.Unlock()
	return nil
}

func startServer(opt asynq.RedisClientOpt, conc int, h asynq.Handler) (*asynq.Server, error) {
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: conc, LogLevel: asynq.WarnLevel, ShutdownTimeout: 5 * time.Second})
	if err := srv.Start(h); err != nil {
		return nil, err
	}
	return srv, nil
}

// processed is the number of tasks the default queue has marked done
// since the server's start and whether the queue is empty.
func processed(insp *asynq.Inspector) (int, bool) {
	qi, err := insp.GetQueueInfo("default")
	if err != nil {
		return 0, false
	}
	return qi.ProcessedTotal, qi.Size == 0
}

// waitProcessed waits until n more tasks than before are marked done and
// the queue is empty, looking every 5 ms.
func waitProcessed(ctx context.Context, insp *asynq.Inspector, before, n int) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		p, empty := processed(insp)
		if p-before >= n && empty {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d tasks processed: %w", p-before, n, ctx.Err())
		}
	}
}

// enqueue enqueues n tasks from c goroutines.
func enqueue(ctx context.Context, client *asynq.Client, n, c int, opts ...asynq.Option) error {
	var next atomic.Int64
	errs := make(chan error, c)
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				cctx, cancel := context.WithTimeout(ctx, time.Minute)
				_, err := client.EnqueueContext(cctx, asynq.NewTask("noop", fmt.Appendf(nil, "%d", i)), opts...)
				cancel()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// throughput enqueues n no-op tasks from c goroutines to a running server
// of concurrency c and returns the rate from the first enqueue until all
// are marked done.
func throughput(ctx context.Context, opt asynq.RedisClientOpt, n, c int) (Figure, error) {
	srv, err := startServer(opt, c, &recorder{})
	if err != nil {
		return Figure{}, err
	}
	defer srv.Shutdown()
	client := asynq.NewClient(opt)
	defer client.Close()
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	before, _ := processed(insp)
	began := time.Now()
	if err := enqueue(ctx, client, n, c); err != nil {
		return Figure{}, fmt.Errorf("enqueue: %w", err)
	}
	if err := waitProcessed(ctx, insp, before, n); err != nil {
		return Figure{}, err
	}
	d := time.Since(began)
	return Figure{Name: "oneshot", Count: n, Seconds: d.Seconds(), PerSec: float64(n) / d.Seconds(),
		Setting: fmt.Sprintf("Concurrency %d, Enqueue from %d goroutines, asynq's defaults otherwise", c, c)}, nil
}

// burstLateness enqueues n tasks due at one instant (ProcessAt) ahead of
// time and returns each task's start − due time.
func burstLateness(ctx context.Context, opt asynq.RedisClientOpt, n, c int, lead time.Duration) (Figure, error) {
	due := time.Now().Add(lead).Truncate(time.Second).Add(time.Second)
	rec := &recorder{due: due}
	srv, err := startServer(opt, c, rec)
	if err != nil {
		return Figure{}, err
	}
	defer srv.Shutdown()
	client := asynq.NewClient(opt)
	defer client.Close()
	insp := asynq.NewInspector(opt)
	defer insp.Close()
	before, _ := processed(insp)
	if err := enqueue(ctx, client, n, c, asynq.ProcessAt(due)); err != nil {
		return Figure{}, fmt.Errorf("enqueue: %w", err)
	}
	if time.Now().After(due) {
		return Figure{}, errors.New("the burst's tasks were not all enqueued before they were due")
	}
	if err := waitProcessed(ctx, insp, before, n); err != nil {
		return Figure{}, err
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return Figure{Name: "burst", Count: n, LatenessMs: rec.late,
		Setting: fmt.Sprintf("ProcessAt, Concurrency %d, asynq's defaults otherwise (due tasks are moved every 5s)", c)}, nil
}

// Command riverpeer measures River (a PostgreSQL job queue) for taskbench's
// peer comparison: jobs inserted and completed per second with a no-op
// worker, at River's defaults with 64 workers and single inserts, and at
// the tuning of River's own benchmark (batch inserts, many workers, short
// fetch cooldown and poll interval); and the lateness of 10,000 jobs
// scheduled for one instant. It runs River's migrations itself and prints
// its figures as JSON on stdout. The PostgreSQL server is started by the
// caller (taskbench -peers).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/taskd/taskd/bench/peers/peerout"
)

// Version is the River release measured (go.mod pins it).
const Version = "v0.51.2"

// Figure and Output are the shared output shape (bench/peers/peerout).
type (
	Figure = peerout.Figure
	Output = peerout.Output
)

type noopArgs struct {
	N int `json:"n"`
}

func (noopArgs) Kind() string { return "noop" }

// noopWorker does nothing; when due is set it records each job's start −
// due time.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	mu   sync.Mutex
	due  time.Time
	late []float64
}

func (w *noopWorker) Work(ctx context.Context, j *river.Job[noopArgs]) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.due.IsZero() {
		w.late = append(w.late, float64(time.Since(w.due).Microseconds())/1000)
	}
	return nil
}

func main() {
	dsn := flag.String("dsn", "", "PostgreSQL connection string")
	jobs := flag.Int("jobs", 20000, "jobs per throughput figure")
	burst := flag.Int("burst", 10000, "jobs of the burst (0 skips)")
	conc := flag.Int("concurrency", 64, "workers and inserting goroutines of the default setting")
	figures := flag.String("figures", "default,tuned,burst,burst_tuned", "figures to measure")
	tunedWorkers := flag.Int("tuned-workers", 2000, "workers of the tuned setting (River's benchmark: 2,000)")
	defaultJobs := flag.Int("default-jobs", 0, "jobs of the default setting's figure (0: -jobs)")
	flag.Parse()
	if *defaultJobs == 0 {
		*defaultJobs = *jobs
	}
	if err := run(*dsn, *jobs, *defaultJobs, *burst, *conc, *tunedWorkers, *figures); err != nil {
		fmt.Fprintln(os.Stderr, "riverpeer:", err)
		os.Exit(1)
	}
}

func run(dsn string, jobs, defaultJobs, burst, conc, tunedWorkers int, figures string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return err
	}
	// pgxpool's default of max(4, CPUs) connections would throttle 64
	// inserters and River's own fetches alike: both settings get a pool
	// larger than their concurrency.
	cfg.MaxConns = int32(conc + 36)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	var version string
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	var fsync, syncCommit string
	if err := pool.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &syncCommit); err != nil {
		return err
	}
	// Each figure runs in a database of its own, freshly migrated, so each
	// starts from the same state as the first: a jobs table PostgreSQL has
	// not yet sized. Emptying one table between figures did not: after
	// TRUNCATE (and VACUUM FULL, as River's own benchmark adds) PostgreSQL
	// could record the table as empty, plan River's job fetch for an empty
	// table (a nested loop over sequential scans) and take seconds per
	// fetch once thousands of jobs arrived: River's fetch (10 s) or
	// scheduler (30 s) timeout then fired and the figure fell tenfold.
	dbs := 0
	fresh := func(measure func(*pgxpool.Pool) (Figure, error)) (Figure, error) {
		dbs++
		name := fmt.Sprintf("river_bench_%d", dbs)
		if _, err := pool.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			return Figure{}, err
		}
		c := cfg.Copy()
		c.ConnConfig.Database = name
		p, err := pgxpool.NewWithConfig(ctx, c)
		if err != nil {
			return Figure{}, err
		}
		defer p.Close()
		mig, err := rivermigrate.New(riverpgxv5.New(p), nil)
		if err != nil {
			return Figure{}, err
		}
		if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return Figure{}, fmt.Errorf("migrate: %w", err)
		}
		return measure(p)
	}
	out := Output{Peer: "river", Version: Version,
		Store: fmt.Sprintf("PostgreSQL %s, fsync=%s, synchronous_commit=%s", version, fsync, syncCommit)}
	want := peerout.Wanted(figures)
	if want["default"] {
		f, err := fresh(func(p *pgxpool.Pool) (Figure, error) {
			return throughput(ctx, p, defaultJobs, conc, 1, &river.Config{Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: conc}}})
		})
		if err != nil {
			return fmt.Errorf("default: %w", err)
		}
		f.Name = "oneshot"
		f.Setting = fmt.Sprintf("%d workers, one Insert per job from %d goroutines, River's defaults otherwise (FetchCooldown 100ms, FetchPollInterval 1s)", conc, conc)
		out.Figures = append(out.Figures, f)
	}
	if want["tuned"] {
		// River's own benchmark: 2,000 workers, FetchCooldown 2 ms,
		// FetchPollInterval 20 ms, InsertMany in batches of 5,000.
		const batch = 5000
		workers := tunedWorkers
		f, err := fresh(func(p *pgxpool.Pool) (Figure, error) {
			return throughput(ctx, p, jobs, 1, batch, &river.Config{
				FetchCooldown: 2 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond,
				Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: workers}}})
		})
		if err != nil {
			return fmt.Errorf("tuned: %w", err)
		}
		f.Name = "oneshot_tuned"
		f.Setting = fmt.Sprintf("%d workers, InsertMany of %d jobs, FetchCooldown 2ms, FetchPollInterval 20ms (River's own benchmark)", workers, batch)
		out.Figures = append(out.Figures, f)
	}
	if want["burst"] && burst > 0 {
		f, err := fresh(func(p *pgxpool.Pool) (Figure, error) {
			return burstLateness(ctx, p, burst, &river.Config{Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: conc}}})
		})
		if err != nil {
			return fmt.Errorf("burst: %w", err)
		}
		f.Name = "burst"
		f.Setting = fmt.Sprintf("InsertOpts.ScheduledAt, %d workers, River's defaults otherwise (its scheduler makes due jobs available every 5s, not configurable)", conc)
		out.Figures = append(out.Figures, f)
	}
	if want["burst_tuned"] && burst > 0 {
		f, err := fresh(func(p *pgxpool.Pool) (Figure, error) {
			return burstLateness(ctx, p, burst, &river.Config{
				FetchCooldown: 2 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond,
				Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: tunedWorkers}}})
		})
		if err != nil {
			return fmt.Errorf("burst_tuned: %w", err)
		}
		f.Name = "burst_tuned"
		f.Setting = fmt.Sprintf("InsertOpts.ScheduledAt, %d workers, FetchCooldown 2ms, FetchPollInterval 20ms (scheduler every 5s)", tunedWorkers)
		out.Figures = append(out.Figures, f)
	}
	return out.Print()
}

func newClient(pool *pgxpool.Pool, cfg *river.Config, w *noopWorker) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	cfg.Workers = workers
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return river.NewClient(riverpgxv5.New(pool), cfg)
}

// throughput starts a client, inserts n jobs (batch 1: one Insert per
// job from c goroutines; else InsertMany of batch jobs, c goroutines) and
// returns the rate from the first insert to the n-th completion event
// (the completion is stored when the event is sent).
func throughput(ctx context.Context, pool *pgxpool.Pool, n, c, batch int, cfg *river.Config) (Figure, error) {
	w := &noopWorker{}
	client, err := newClient(pool, cfg, w)
	if err != nil {
		return Figure{}, err
	}
	events, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: n + 1000,
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled}})
	defer cancelSub()
	if err := client.Start(ctx); err != nil {
		return Figure{}, err
	}
	defer stopClient(client)
	began := time.Now()
	calls := (n + batch - 1) / batch
	var next atomic.Int64
	errs := make(chan error, c)
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= calls {
					return
				}
				if batch == 1 {
					if _, err := client.Insert(ctx, noopArgs{N: k}, nil); err != nil {
						errs <- err
						return
					}
					continue
				}
				var ps []river.InsertManyParams
				for i := k * batch; i < (k+1)*batch && i < n; i++ {
					ps = append(ps, river.InsertManyParams{Args: noopArgs{N: i}})
				}
				if _, err := client.InsertMany(ctx, ps); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return Figure{}, fmt.Errorf("insert: %w", err)
	}
	for done := 0; done < n; {
		select {
		case ev := <-events:
			if ev == nil {
				return Figure{}, errors.New("subscription closed")
			}
			if ev.Kind != river.EventKindJobCompleted {
				return Figure{}, fmt.Errorf("job %d: event %s", ev.Job.ID, ev.Kind)
			}
			done++
		case <-ctx.Done():
			return Figure{}, fmt.Errorf("%d of %d jobs completed: %w", done, n, ctx.Err())
		}
	}
	d := time.Since(began)
	return Figure{Count: n, Seconds: d.Seconds(), PerSec: float64(n) / d.Seconds()}, nil
}

// burstLateness inserts n jobs scheduled for one instant (InsertMany of
// 1,000, ahead of time) on a client of the given config and returns each
// job's start − scheduled time.
func burstLateness(ctx context.Context, pool *pgxpool.Pool, n int, cfg *river.Config) (Figure, error) {
	due := time.Now().Add(4 * time.Second).Truncate(time.Second).Add(time.Second)
	w := &noopWorker{due: due}
	client, err := newClient(pool, cfg, w)
	if err != nil {
		return Figure{}, err
	}
	events, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{ChanSize: n + 1000,
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled}})
	defer cancelSub()
	if err := client.Start(ctx); err != nil {
		return Figure{}, err
	}
	defer stopClient(client)
	for b := 0; b < n; b += 1000 {
		var ps []river.InsertManyParams
		for i := b; i < b+1000 && i < n; i++ {
			ps = append(ps, river.InsertManyParams{Args: noopArgs{N: i}, InsertOpts: &river.InsertOpts{ScheduledAt: due}})
		}
		if _, err := client.InsertMany(ctx, ps); err != nil {
			return Figure{}, fmt.Errorf("insert: %w", err)
		}
	}
	if time.Now().After(due) {
		return Figure{}, errors.New("the burst's jobs were not all inserted before they were due")
	}
	for done := 0; done < n; {
		select {
		case ev := <-events:
			if ev == nil {
				return Figure{}, errors.New("subscription closed")
			}
			if ev.Kind != river.EventKindJobCompleted {
				return Figure{}, fmt.Errorf("job %d: event %s", ev.Job.ID, ev.Kind)
			}
			done++
		case <-ctx.Done():
			return Figure{}, fmt.Errorf("%d of %d jobs completed: %w", done, n, ctx.Err())
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return Figure{Count: n, LatenessMs: w.late}, nil
}

func stopClient(c *river.Client[pgx.Tx]) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = c.Stop(ctx)
}

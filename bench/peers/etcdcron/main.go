// Command etcdcronpeer measures go-etcd-cron (a cron and one-shot job
// scheduler over etcd 3.5) for taskbench's peer comparison: one-shot jobs
// triggered and finished per second, periodic triggers per second, and the
// lateness of 10,000 jobs due at one instant; also etcd 3.5's own raw Put
// rate on the same server. It prints its figures as JSON on stdout.
//
// With -serve DIR it is instead the etcd 3.5 server (embedded from etcd's
// 3.5 server module, fsync on) that taskbench -peers starts for it: it
// prints "ready <client URL>" once serving and stops on SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/diagridio/go-etcd-cron/api"
	"github.com/diagridio/go-etcd-cron/cron"
	"github.com/go-logr/zapr"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/taskd/taskd/bench/peers/peerout"
)

// Version is the go-etcd-cron release measured (go.mod pins it).
const Version = "v0.12.0"

// Figure and Output are the shared output shape (bench/peers/peerout).
type (
	Figure = peerout.Figure
	Output = peerout.Output
)

func main() {
	serve := flag.String("serve", "", "run the etcd 3.5 server with its data in this directory")
	endpoint := flag.String("etcd", "", "etcd 3.5 client URL")
	jobs := flag.Int("jobs", 20000, "jobs of the one-shot figure")
	periodic := flag.Int("periodic", 10000, "jobs of the periodic figure, each every second (0 skips)")
	window := flag.Duration("window", 5*time.Second, "the periodic figure's measuring window")
	burst := flag.Int("burst", 10000, "jobs of the burst (0 skips)")
	conc := flag.Int("concurrency", 64, "goroutines adding jobs (the cron's workers stay at their default of 64)")
	figures := flag.String("figures", "put,oneshot,periodic,burst", "figures to measure")
	lead := flag.Duration("lead", 12*time.Second, "how far ahead the periodic jobs' first fire time and the burst's due time are (all their jobs must be added by then)")
	flag.Parse()
	var err error
	if *serve != "" {
		err = serveEtcd(*serve)
	} else {
		err = run(*endpoint, *jobs, *periodic, *burst, *conc, *window, *lead, *figures)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdcronpeer:", err)
		os.Exit(1)
	}
}

// serveEtcd runs a single-member etcd 3.5 in dir on a free loopback port
// until SIGTERM or SIGINT.
func serveEtcd(dir string) error {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	curl, _ := url.Parse("http://127.0.0.1:0")
	purl, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*curl}, []url.URL{*curl}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*purl}, []url.URL{*purl}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = false
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		return errors.New("etcd not ready after a minute")
	case err := <-e.Err():
		return err
	}
	fmt.Printf("ready http://%s\n", e.Clients[0].Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
		return nil
	case err := <-e.Err():
		return err
	}
}

func run(endpoint string, jobs, periodic, burst, conc int, window, lead time.Duration, figures string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	st, err := cli.Status(sctx, endpoint)
	scancel()
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	out := Output{Peer: "go-etcd-cron", Version: Version, Store: fmt.Sprintf("etcd %s (embedded from its 3.5 server module in a separate process, fsync on)", st.Version)}
	want := peerout.Wanted(figures)
	if want["put"] {
		f, err := rawPut(ctx, cli, jobs, conc)
		if err != nil {
			return err
		}
		out.Figures = append(out.Figures, f)
	}
	if want["oneshot"] {
		f, err := oneShots(ctx, cli, jobs, conc)
		if err != nil {
			return fmt.Errorf("oneshot: %w", err)
		}
		out.Figures = append(out.Figures, f)
	}
	if want["periodic"] && periodic > 0 {
		f, err := periodics(ctx, cli, periodic, conc, window, lead)
		if err != nil {
			return fmt.Errorf("periodic: %w", err)
		}
		out.Figures = append(out.Figures, f)
	}
	if want["burst"] && burst > 0 {
		f, err := burstLateness(ctx, cli, burst, conc, lead)
		if err != nil {
			return fmt.Errorf("burst: %w", err)
		}
		out.Figures = append(out.Figures, f)
	}
	return out.Print()
}

// parallel runs f(0..n-1) on c goroutines.
func parallel(n, c int, f func(i int) error) error {
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
				if err := f(i); err != nil {
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

// rawPut is etcd 3.5's own Put rate: n single-key Puts of 256 bytes from c
// goroutines, for reference beside the cron's figures.
func rawPut(ctx context.Context, cli *clientv3.Client, n, c int) (Figure, error) {
	value := string(make([]byte, 256))
	began := time.Now()
	err := parallel(n, c, func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := cli.Put(cctx, fmt.Sprintf("/bench-raw/%08d", i), value)
		return err
	})
	if err != nil {
		return Figure{}, fmt.Errorf("raw put: %w", err)
	}
	d := time.Since(began)
	return Figure{Name: "etcd35_put", Count: n, Seconds: d.Seconds(), PerSec: float64(n) / d.Seconds(),
		Setting: fmt.Sprintf("etcd 3.5 raw Put, %d goroutines, 256-byte values", c)}, nil
}

// instance is a running cron on its own namespace.
type instance struct {
	cron api.Interface
	stop func() error
}

func startCron(ctx context.Context, cli *clientv3.Client, ns string, trigger func(*api.TriggerRequest)) (*instance, error) {
	c, err := cron.New(cron.Options{
		Log:       zapr.NewLogger(zap.NewNop()),
		Client:    cli,
		Namespace: ns,
		ID:        "bench",
		TriggerFn: func(req *api.TriggerRequest, respond func(*api.TriggerResponse)) {
			trigger(req)
			respond(&api.TriggerResponse{Result: api.TriggerResponseResult_SUCCESS})
		},
	})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	stop := func() error {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for !c.IsElected() {
		select {
		case <-tick.C:
		case err := <-done:
			cancel()
			return nil, fmt.Errorf("cron stopped before it was elected: %w", err)
		case <-deadline:
			_ = stop()
			return nil, errors.New("cron not elected after a minute")
		}
	}
	return &instance{cron: c, stop: stop}, nil
}

// waitGone waits until no job is left under ns (one-shot jobs are deleted
// once triggered), looking every 5 ms.
func waitGone(ctx context.Context, cli *clientv3.Client, ns string, triggered *atomic.Int64, n int) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if triggered.Load() >= int64(n) {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			r, err := cli.Get(cctx, ns+"/jobs/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			cancel()
			if err != nil {
				return err
			}
			if r.Count == 0 {
				return nil
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d jobs triggered: %w", triggered.Load(), n, ctx.Err())
		}
	}
}

// oneShots adds n jobs due now from c goroutines and returns the rate from
// the first Add until every job is triggered and deleted.
func oneShots(ctx context.Context, cli *clientv3.Client, n, c int) (Figure, error) {
	var triggered atomic.Int64
	in, err := startCron(ctx, cli, "oneshot", func(*api.TriggerRequest) { triggered.Add(1) })
	if err != nil {
		return Figure{}, err
	}
	defer in.stop()
	began := time.Now()
	now := "0s"
	if err := parallel(n, c, func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return in.cron.Add(cctx, fmt.Sprintf("j-%06d", i), &api.Job{DueTime: &now})
	}); err != nil {
		return Figure{}, fmt.Errorf("add: %w", err)
	}
	if err := waitGone(ctx, cli, "oneshot", &triggered, n); err != nil {
		return Figure{}, err
	}
	d := time.Since(began)
	return Figure{Name: "oneshot", Count: n, Seconds: d.Seconds(), PerSec: float64(n) / d.Seconds(),
		Setting: fmt.Sprintf("Add (DueTime now) from %d goroutines, 64 cron workers (default); until triggered and deleted", c)}, nil
}

// periodics adds n jobs triggering every second from a common whole
// second and counts the triggers during window, from two seconds after
// the first fire time.
func periodics(ctx context.Context, cli *clientv3.Client, n, c int, window, lead time.Duration) (Figure, error) {
	var mu sync.Mutex
	var from, to time.Time
	count := 0
	in, err := startCron(ctx, cli, "periodic", func(*api.TriggerRequest) {
		now := time.Now()
		mu.Lock()
		if !from.IsZero() && !now.Before(from) && now.Before(to) {
			count++
		}
		mu.Unlock()
	})
	if err != nil {
		return Figure{}, err
	}
	defer in.stop()
	start := time.Now().Add(lead).Truncate(time.Second).Add(time.Second)
	due := start.UTC().Format(time.RFC3339)
	every := "@every 1s"
	if err := parallel(n, c, func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return in.cron.Add(cctx, fmt.Sprintf("p-%06d", i), &api.Job{DueTime: &due, Schedule: &every})
	}); err != nil {
		return Figure{}, fmt.Errorf("add: %w", err)
	}
	if time.Now().After(start) {
		return Figure{}, errors.New("the periodic jobs were not all added before their first fire time")
	}
	mu.Lock()
	from, to = start.Add(2*time.Second), start.Add(2*time.Second+window)
	mu.Unlock()
	select {
	case <-time.After(time.Until(to)):
	case <-ctx.Done():
		return Figure{}, ctx.Err()
	}
	mu.Lock()
	defer mu.Unlock()
	return Figure{Name: "periodic", Count: count, Seconds: window.Seconds(), PerSec: float64(count) / window.Seconds(),
		Setting: fmt.Sprintf("%d jobs @every 1s from one whole second (%d triggers/s due)", n, n)}, nil
}

// burstLateness adds n jobs due at one whole second (ahead of time) and
// returns each trigger's time − due time.
func burstLateness(ctx context.Context, cli *clientv3.Client, n, c int, lead time.Duration) (Figure, error) {
	due := time.Now().Add(lead).Truncate(time.Second).Add(time.Second)
	var mu sync.Mutex
	late := make([]float64, 0, n)
	var triggered atomic.Int64
	in, err := startCron(ctx, cli, "burst", func(*api.TriggerRequest) {
		l := float64(time.Since(due).Microseconds()) / 1000
		mu.Lock()
		late = append(late, l)
		mu.Unlock()
		triggered.Add(1)
	})
	if err != nil {
		return Figure{}, err
	}
	defer in.stop()
	at := due.UTC().Format(time.RFC3339)
	if err := parallel(n, c, func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		return in.cron.Add(cctx, fmt.Sprintf("b-%06d", i), &api.Job{DueTime: &at})
	}); err != nil {
		return Figure{}, fmt.Errorf("add: %w", err)
	}
	if time.Now().After(due) {
		return Figure{}, errors.New("the burst's jobs were not all added before they were due")
	}
	if err := waitGone(ctx, cli, "burst", &triggered, n); err != nil {
		return Figure{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	return Figure{Name: "burst", Count: n, LatenessMs: late,
		Setting: fmt.Sprintf("Add with DueTime at one whole second, from %d goroutines, 64 cron workers (default)", c)}, nil
}

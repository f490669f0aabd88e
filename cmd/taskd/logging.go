package main

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/taskd/taskd/pkg/config"
	"github.com/taskd/taskd/pkg/taskservice"
)

// newLogger is taskd's logger: --log-level, and --log-format json for one
// JSON object a line.
func newLogger(cfg config.Config, out io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "taskd",
		Level:      hclog.LevelFromString(cfg.LogLevel),
		Output:     out,
		JSONFormat: cfg.LogFormat == "json",
	}).With("node", cfg.Name)
}

// maxLagSamples bounds the fire lags kept for one summary period: past it
// a uniform sample of the period's lags is kept (reservoir sampling).
const maxLagSamples = 1 << 16

// runLog logs what the runs of the node do: each failed run once at WARN
// (the library logs none), and a summary at INFO every period.
type runLog struct {
	log hclog.Logger

	mu       sync.Mutex
	runs     int       // runs finished in the period (every outcome)
	failures int       // of which FAILED
	lags     []float64 // fire lags of runs started in the period, seconds
	lagsSeen int       // runs started in the period with a fire time
}

// observe is a node event listener.
func (l *runLog) observe(ev taskservice.Event) {
	switch ev.Type {
	case taskservice.EventFailed:
		l.log.Warn("run failed", "identity", ev.Identity, "task", ev.TaskID, "kind", ev.Kind,
			"run", ev.RunNumber, "attempt", ev.Attempt, "outcome", ev.Outcome.String(), "error", ev.Message)
		l.mu.Lock()
		l.runs++
		l.failures++
		l.mu.Unlock()
	case taskservice.EventSucceeded, taskservice.EventDropped, taskservice.EventInterrupted, taskservice.EventVetoed:
		l.mu.Lock()
		l.runs++
		l.mu.Unlock()
	case taskservice.EventStarted:
		if ev.FireTime.IsZero() {
			return
		}
		lag := max(ev.Time.Sub(ev.FireTime), 0).Seconds()
		l.mu.Lock()
		l.lagsSeen++
		if len(l.lags) < maxLagSamples {
			l.lags = append(l.lags, lag)
		} else if i := rand.IntN(l.lagsSeen); i < maxLagSamples {
			l.lags[i] = lag
		}
		l.mu.Unlock()
	}
}

// summarize logs the period's counts at INFO and starts a new period.
func (l *runLog) summarize(period time.Duration) {
	l.mu.Lock()
	runs, failures, lags, started := l.runs, l.failures, l.lags, l.lagsSeen
	l.runs, l.failures, l.lags, l.lagsSeen = 0, 0, nil, 0
	l.mu.Unlock()
	args := []any{"period", period.String(), "runs", runs, "failures", failures, "started", started}
	if len(lags) > 0 {
		p99 := time.Duration(percentile(lags, 0.99) * float64(time.Second))
		args = append(args, "fire_lag_p99", p99.String())
	}
	l.log.Info("summary", args...)
}

// follow logs a summary every period until ctx ends.
func (l *runLog) follow(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.summarize(period)
		case <-ctx.Done():
			return
		}
	}
}

// percentile is the nearest-rank q-quantile of xs (not empty); it sorts xs.
func percentile(xs []float64, q float64) float64 {
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/config"
	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// A failed run is logged once at WARN with its task, run, attempt and
// error; a summary sums the period's runs and failures and gives the fire
// lag's p99, then starts a new period.
func TestRunLogWarnsAndSummarizes(t *testing.T) {
	var out bytes.Buffer
	cfg := config.Default()
	cfg.Name, cfg.LogLevel, cfg.LogFormat = "n1", "info", "text"
	l := &runLog{log: newLogger(cfg, &out)}
	fire := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// 100 starts, lags 1..100 ms: the nearest-rank p99 is 99 ms.
	for i := 1; i <= 100; i++ {
		l.observe(taskservice.Event{Type: taskservice.EventStarted, FireTime: fire, Time: fire.Add(time.Duration(i) * time.Millisecond)})
	}
	l.observe(taskservice.Event{Type: taskservice.EventStarted, Time: fire}) // run-now: no fire time
	l.observe(taskservice.Event{Type: taskservice.EventSucceeded, Outcome: taskdv1.Outcome_OUTCOME_SUCCESS})
	l.observe(taskservice.Event{Type: taskservice.EventFailed, Identity: "acct-1", TaskID: "t1", Kind: "mail",
		RunNumber: 7, Attempt: 3, Outcome: taskdv1.Outcome_OUTCOME_ERROR, Message: "exit code 1: smtp down"})
	l.observe(taskservice.Event{Type: taskservice.EventRetryScheduled}) // not a run
	l.summarize(time.Minute)
	l.summarize(time.Minute)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, got %d:\n%s", len(lines), out.String())
	}
	for _, c := range []struct {
		line  string
		wants []string
	}{
		{lines[0], []string{"[WARN]", "run failed", "node=n1", "identity=acct-1", "task=t1", "kind=mail", "run=7", "attempt=3",
			"outcome=OUTCOME_ERROR", `error="exit code 1: smtp down"`}},
		{lines[1], []string{"[INFO]", "summary", "period=1m0s", "runs=2", "failures=1", "started=100", "fire_lag_p99=99ms"}},
		{lines[2], []string{"[INFO]", "summary", "runs=0", "failures=0", "started=0"}},
	} {
		for _, w := range c.wants {
			if !strings.Contains(c.line, w) {
				t.Errorf("line %q lacks %q", c.line, w)
			}
		}
	}
	if strings.Contains(lines[2], "fire_lag_p99") {
		t.Errorf("a period with no start gives no p99: %q", lines[2])
	}
}

func TestPercentile(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{[]float64{5}, 0.99, 5},
		{[]float64{3, 1, 2}, 0.5, 2},
		{[]float64{1, 2, 3, 4}, 0.99, 4},
		{[]float64{4, 3, 2, 1}, 0.25, 1},
	} {
		if got := percentile(append([]float64(nil), c.xs...), c.q); got != c.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", c.xs, c.q, got, c.want)
		}
	}
}

// --log-format json gives one JSON object a line.
func TestJSONLogFormat(t *testing.T) {
	var out bytes.Buffer
	cfg := config.Default()
	cfg.Name, cfg.LogFormat = "n1", "json"
	newLogger(cfg, &out).Info("hello", "k", 1)
	got := strings.TrimSpace(out.String())
	for _, w := range []string{`"@message":"hello"`, `"@level":"info"`, `"k":1`, `"node":"n1"`} {
		if !strings.HasPrefix(got, "{") || !strings.Contains(got, w) {
			t.Errorf("JSON line %q lacks %s", got, w)
		}
	}
}

// --version prints the build information and exits 0 without reading the
// other options.
func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"--version", "--no-such-option"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("--version exit %d: %s", code, errOut.String())
	}
	if got := out.String(); !strings.HasPrefix(got, "taskd ") || !strings.Contains(got, "built with go") {
		t.Fatalf("--version printed %q", got)
	}
}

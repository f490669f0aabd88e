package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// scrape reads addr's /metrics and parses it.
func scrape(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// sample finds the metric of family name whose labels include labels
// (given as name, value pairs), or nil.
func sample(families map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	f := families[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		return m
	}
	return nil
}

// value is a counter's or gauge's value, or a histogram's count; -1 if the
// sample is missing.
// wantValue requires the value of the sample of name with labels in
// families to be want.
func wantValue(t *testing.T, families map[string]*dto.MetricFamily, want float64, name string, labels ...string) {
	t.Helper()
	if v := value(families, name, labels...); v != want {
		t.Fatalf("%s%q = %v; want %v", name, labels, v, want)
	}
}

func value(families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	m := sample(families, name, labels...)
	switch {
	case m == nil:
		return -1
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return -1
}

// jsonLogLines parses the JSON log lines of a process's output whose
// message is msg.
func jsonLogLines(t testing.TB, out, msg string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %v: %q", err, line)
		}
		if m["@message"] == msg {
			lines = append(lines, m)
		}
	}
	return lines
}

// A node that ran one task that succeeds, one that fails once and then
// succeeds, and one that fails until it is DEAD, exports each metric
// family with the counts of what it did; it logs each failed run once at
// WARN, and its summaries (in JSON) add up to the runs; --pprof serves
// the profiles.
func TestMetricsLogsAndPprof(t *testing.T) {
	t.Parallel()
	p := startNode(t, nodeOptions{name: "metrics", dataDir: t.TempDir(), extra: []string{
		"--exec", "ok=true",
		"--exec", `flaky=test "$TASKD_ATTEMPT" -ge 2 || exit 75`,
		"--exec", "bad=echo boom >&2; exit 75",
		"--log-format", "json", "--log-summary", "50ms", "--pprof", "--limit", "flaky=1",
	}})
	c := p.Client()
	retry := func(spec *taskdv1.TaskSpec) *taskdv1.TaskSpec {
		spec.MaxAttempts = 2
		spec.Backoff = &taskdv1.Backoff{Initial: durationpb.New(10 * time.Millisecond), Max: durationpb.New(10 * time.Millisecond)}
		return spec
	}
	ok := schedule(t, c, &taskdv1.TaskSpec{Identity: "m-ok", Kind: "ok", Triggers: onceAfter(0)})
	flaky := schedule(t, c, retry(&taskdv1.TaskSpec{Identity: "m-flaky", Kind: "flaky", Triggers: onceAfter(0)}))
	bad := schedule(t, c, retry(&taskdv1.TaskSpec{Identity: "m-bad", Kind: "bad", Triggers: onceAfter(0)}))
	waitTaskState(t, c, "m-ok", ok.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	waitTaskState(t, c, "m-flaky", flaky.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	waitTaskState(t, c, "m-bad", bad.Id, taskdv1.TaskState_TASK_STATE_DEAD)

	// Five runs: ok, flaky twice (ERROR then SUCCESS), bad twice (ERROR).
	// The task states above are committed before the events that count
	// them are emitted: wait for the last counter first.
	var fam map[string]*dto.MetricFamily
	eventually(t, waitLong, "five runs counted", func() error {
		fam = scrape(t, p.httpAddr)
		if got := value(fam, "taskd_dead_tasks_total"); got != 1 {
			return fmt.Errorf("taskd_dead_tasks_total %v", got)
		}
		return nil
	})
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"taskd_runs_total", []string{"outcome", "SUCCESS"}, 2},
		{"taskd_runs_total", []string{"outcome", "ERROR"}, 3},
		{"taskd_events_total", []string{"type", "FAILED"}, 3},
		{"taskd_events_total", []string{"type", "STARTED"}, 5},
		{"taskd_retries_total", nil, 2},
		{"taskd_dead_tasks_total", nil, 1},
		{"taskd_dropped_commits_total", nil, 0},
		{"taskd_misfired_fire_times_total", nil, 0},
		{"taskd_handoffs_total", nil, 0},
		{"taskd_identity_moves_total", nil, 0},
		{"taskd_rebalance_moves_total", nil, 0},
		{"taskd_run_duration_seconds", []string{"kind", "ok", "outcome", "SUCCESS"}, 1},
		{"taskd_run_duration_seconds", []string{"kind", "flaky", "outcome", "ERROR"}, 1},
		{"taskd_run_duration_seconds", []string{"kind", "flaky", "outcome", "SUCCESS"}, 1},
		{"taskd_run_duration_seconds", []string{"kind", "bad", "outcome", "ERROR"}, 2},
		{"taskd_fire_lag_seconds", nil, 5},
		{"taskd_run_queue_wait_seconds", []string{"kind", "flaky"}, 2},
		{"taskd_run_queue_wait_seconds", []string{"kind", "bad"}, 2},
		{"taskd_runs_waiting_for_limit", []string{"kind", "flaky"}, 0},
		{"taskd_identities_owned", nil, 3},
		{"taskd_tasks", []string{"state", "running"}, 0},
		{"taskd_tasks", []string{"state", "due"}, 0},
		{"taskd_tasks", []string{"state", "scheduled"}, 0},
		// The two COMPLETED tasks wait for the end of their retention; a
		// DEAD task is kept for inspection, out of the queue.
		{"taskd_tasks", []string{"state", "retained"}, 2},
		{"taskd_timer_queue_entries", nil, 2},
		{"taskd_self_fenced", nil, 0},
		{"taskd_node_state", []string{"state", "RUNNING"}, 1},
		{"taskd_node_state", []string{"state", "DRAINING"}, 0},
		{"grpc_server_handled_total", []string{"grpc_method", "ScheduleTask", "grpc_code", "OK"}, 3},
		{"grpc_server_handling_seconds", []string{"grpc_method", "ScheduleTask"}, 3},
	} {
		if got := value(fam, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Counts that depend on the node's own work: present and positive.
	for _, c := range []struct {
		name   string
		labels []string
	}{
		{"taskd_etcd_txn_items", nil},
		{"taskd_etcd_request_duration_seconds", []string{"op", "Txn"}},
		{"taskd_etcd_request_duration_seconds", []string{"op", "Range"}},
		{"taskd_lease_renewal_age_seconds", nil},
		{"go_goroutines", nil},
		{"process_cpu_seconds_total", nil},
	} {
		if got := value(fam, c.name, c.labels...); got < 0 || (got == 0 && c.name != "taskd_lease_renewal_age_seconds") {
			t.Errorf("%s%v = %v, want a positive sample", c.name, c.labels, got)
		}
	}
	// A counter vector with no sample is not listed: the etcd errors
	// counter shows up with the first failed request only.
	if f := fam["taskd_etcd_request_errors_total"]; f != nil && f.GetType() != dto.MetricType_COUNTER {
		t.Errorf("taskd_etcd_request_errors_total is a %v", f.GetType())
	}
	// The txn item histogram counts writes: its sum covers at least the
	// three schedules, five starts and five commits.
	if m := sample(fam, "taskd_etcd_txn_items"); m.GetHistogram().GetSampleSum() < 13 {
		t.Errorf("taskd_etcd_txn_items sum %v, want >= 13", m.GetHistogram().GetSampleSum())
	}

	// One WARN line per failed run, with its task, run and attempt (a
	// retry is a run of its own).
	warns := jsonLogLines(t, p.log.String(), "run failed")
	got := map[string]int{}
	for _, w := range warns {
		if w["@level"] != "warn" || !strings.Contains(fmt.Sprint(w["error"]), "exit code 75") {
			t.Errorf("run failed line %v: want level warn and the handler's error", w)
		}
		got[fmt.Sprintf("%v/%v run %v attempt %v", w["identity"], w["task"], w["run"], w["attempt"])]++
	}
	want := map[string]int{
		fmt.Sprintf("m-flaky/%s run 1 attempt 1", flaky.Id): 1,
		fmt.Sprintf("m-bad/%s run 1 attempt 1", bad.Id):     1,
		fmt.Sprintf("m-bad/%s run 2 attempt 2", bad.Id):     1,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("run failed lines %v, want %v", got, want)
	}

	// The summaries add up to the five runs, three of them failed.
	eventually(t, waitLong, "summaries of five runs", func() error {
		runs, failures, started := 0.0, 0.0, 0.0
		lag := false
		for _, s := range jsonLogLines(t, p.log.String(), "summary") {
			runs += s["runs"].(float64)
			failures += s["failures"].(float64)
			started += s["started"].(float64)
			if p99, ok := s["fire_lag_p99"].(string); ok {
				if _, err := time.ParseDuration(p99); err != nil {
					return fmt.Errorf("fire_lag_p99 %q: %v", p99, err)
				}
				lag = true
			}
		}
		if runs != 5 || failures != 3 || started != 5 || !lag {
			return fmt.Errorf("summaries add up to %v runs, %v failures, %v started (fire lag p99 given: %v)", runs, failures, started, lag)
		}
		return nil
	})

	// --pprof serves the profiles on --http.
	resp, err := http.Get("http://" + p.httpAddr + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "--pprof") {
		t.Errorf("GET /debug/pprof/cmdline: %d %q, want 200 with the command line", resp.StatusCode, body)
	}
}

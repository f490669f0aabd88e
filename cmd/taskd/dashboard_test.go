package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
)

// dashboardFile is the Grafana dashboard over taskd's metrics.
var dashboardFile = filepath.Join("..", "..", "deploy", "grafana", "taskd.json")

// exportedNames are the metric family names of the registry /metrics
// serves (built by the same function as in serve), described rather than
// gathered so that vectors without a sample yet (the etcd error counter
// before the first error, run durations before the first run) count too.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	gs := grpc.NewServer()
	defer gs.Stop()
	reg := newMetrics().registry(nil, gs)
	ch := make(chan *prometheus.Desc)
	go func() {
		reg.Describe(ch)
		close(ch)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in metric description %s", d)
		}
		names[m[1]] = true
	}
	return names
}

// PromQL pieces that hold no metric name: string literals, label
// matchers, range and subquery brackets, grouping clauses.
var (
	promqlString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promqlMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promqlRange    = regexp.MustCompile(`\[[^\[\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
	// label_values(METRIC, LABEL) in a dashboard variable's query.
	labelValues = regexp.MustCompile(`^\s*label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$`)
)

// promqlMetricNames lists the metric names an expression selects: every
// identifier left once strings, matchers, ranges and grouping clauses are
// cut out, except function and aggregation names (followed by a
// parenthesis) and keywords.
func promqlMetricNames(expr string) []string {
	if m := labelValues.FindStringSubmatch(expr); m != nil {
		return []string{m[1]}
	}
	s := promqlString.ReplaceAllString(expr, `""`)
	s = promqlMatchers.ReplaceAllString(s, "{}")
	s = promqlRange.ReplaceAllString(s, "[]")
	s = promqlGrouping.ReplaceAllString(s, "")
	var names []string
	for _, loc := range promqlIdent.FindAllStringIndex(s, -1) {
		ident := s[loc[0]:loc[1]]
		// Part of a number (1e3) or a dashboard variable ($node).
		if loc[0] > 0 && strings.ContainsRune("0123456789.$", rune(s[loc[0]-1])) {
			continue
		}
		// A function or an aggregation.
		if strings.HasPrefix(strings.TrimLeft(s[loc[1]:], " \t\n"), "(") {
			continue
		}
		if promqlKeywords[strings.ToLower(ident)] {
			continue
		}
		names = append(names, ident)
	}
	return names
}

func TestPromqlMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`taskd_identities_owned`, []string{"taskd_identities_owned"}},
		{`sum by (outcome) (rate(taskd_runs_total{instance=~"$instance"}[$__rate_interval]))`, []string{"taskd_runs_total"}},
		{`histogram_quantile(0.99, sum by (le, kind) (rate(taskd_run_duration_seconds_bucket{kind="a b", instance=~"x|y"}[5m])))`,
			[]string{"taskd_run_duration_seconds_bucket"}},
		{`taskd_node_state{state="RUNNING"} == 1 and on (instance) taskd_self_fenced == 0`, []string{"taskd_node_state", "taskd_self_fenced"}},
		{`sum without (grpc_code) (rate(grpc_server_handled_total[1m])) / ignoring(x) group_left (y) up offset 5m`,
			[]string{"grpc_server_handled_total", "up"}},
		{`1e3 * max(taskd_lease_renewal_age_seconds) > bool 2.5`, []string{"taskd_lease_renewal_age_seconds"}},
		{`label_values(taskd_node_state, instance)`, []string{"taskd_node_state"}},
	} {
		if got := promqlMetricNames(c.expr); !slices.Equal(got, c.want) {
			t.Errorf("%s: names %q, want %q", c.expr, got, c.want)
		}
	}
}

// unknownMetric says why name is not one taskd exports, or "" if it is:
// a family's name, or a histogram's or summary's series of one (_bucket,
// _sum, _count).
func unknownMetric(name string, exported map[string]bool) string {
	if exported[name] {
		return ""
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] {
			return ""
		}
	}
	return "not exported by taskd"
}

// dashboardExprs are the PromQL expressions of a Grafana dashboard: its
// panels' targets (rows' panels included) and its query variables.
func dashboardExprs(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	type target struct {
		Expr string `json:"expr"`
	}
	type panel struct {
		Title   string   `json:"title"`
		Type    string   `json:"type"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"`
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	exprs := map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for i, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q target %d has no expression", p.Title, i)
				}
				exprs[p.Title+" #"+string(rune('A'+i))] = tg.Expr
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
		}
		exprs["variable "+v.Name] = q.Query
	}
	return exprs
}

// Every metric the dashboard's queries use is one taskd exports, and the
// dashboard covers what an operator watches.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	exported := exportedNames(t)
	// The check means something only if the set is taskd's: a few of its
	// families, and a name it does not have.
	for _, name := range []string{"taskd_runs_total", "taskd_etcd_request_errors_total", "grpc_server_handled_total", "go_goroutines"} {
		if !exported[name] {
			t.Fatalf("%s missing from the exported names %v", name, exported)
		}
	}
	for _, c := range []struct{ name, want string }{
		{"taskd_run_duration_seconds_bucket", ""},
		{"taskd_runs", "not exported by taskd"},
		{"taskd_run_duration_bucket", "not exported by taskd"},
	} {
		if got := unknownMetric(c.name, exported); got != c.want {
			t.Errorf("unknownMetric(%s) = %q, want %q", c.name, got, c.want)
		}
	}

	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for where, expr := range dashboardExprs(t, raw) {
		names := promqlMetricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric in %q", where, expr)
		}
		for _, n := range names {
			if why := unknownMetric(n, exported); why != "" {
				t.Errorf("%s: %s in %q is %s", where, n, expr, why)
			}
			used[strings.TrimSuffix(n, "_bucket")] = true
		}
	}
	for _, name := range []string{
		"taskd_runs_total", "taskd_run_duration_seconds", "taskd_fire_lag_seconds", "taskd_tasks",
		"taskd_timer_queue_entries", "taskd_identities_owned", "taskd_handoff_duration_seconds",
		"taskd_etcd_request_duration_seconds", "taskd_etcd_request_errors_total",
		"taskd_lease_renewal_age_seconds", "taskd_self_fenced", "taskd_run_queue_wait_seconds",
		"taskd_runs_waiting_for_limit", "taskd_runs_waiting_for_worker",
	} {
		if !used[name] {
			t.Errorf("the dashboard has no panel over %s", name)
		}
	}
}

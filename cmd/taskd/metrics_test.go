package main

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestMetricsCountMisfiresAndOutcomes: a MISFIRED event adds the fire
// times it stands for; runs are counted by outcome, vetoed ones included.
func TestMetricsCountMisfiresAndOutcomes(t *testing.T) {
	m := newMetrics()
	m.observe(taskservice.Event{Type: taskservice.EventMisfired, Count: 3})
	m.observe(taskservice.Event{Type: taskservice.EventMisfired, Count: 2})
	m.observe(taskservice.Event{Type: taskservice.EventSucceeded, Outcome: taskdv1.Outcome_OUTCOME_SUCCESS})
	m.observe(taskservice.Event{Type: taskservice.EventVetoed})
	if got := testutil.ToFloat64(m.misfires); got != 5 {
		t.Fatalf("misfired fire times %v, want 5", got)
	}
	if got := testutil.ToFloat64(m.runs.WithLabelValues("SUCCESS")); got != 1 {
		t.Fatalf("SUCCESS runs %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.runs.WithLabelValues("VETOED")); got != 1 {
		t.Fatalf("VETOED runs %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.events.WithLabelValues("MISFIRED")); got != 2 {
		t.Fatalf("MISFIRED events %v, want 2", got)
	}
}

// Each event feeds its metric: durations by kind and outcome for runs
// started here, the fire lag of starts with a fire time, the queue wait of
// every start by kind, handoffs, moves,
// retries, dropped commits and DEAD tasks; the observer's Txn sizes,
// handoff times and rebalancing moves.
func TestMetricsFromEvents(t *testing.T) {
	m := newMetrics()
	fire := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, ev := range []taskservice.Event{
		{Type: taskservice.EventStarted, Kind: "mail", FireTime: fire, Ready: fire, Time: fire.Add(30 * time.Millisecond)},
		{Type: taskservice.EventStarted, Kind: "mail", Ready: fire, Time: fire.Add(time.Millisecond)}, // run-now: no fire time
		{Type: taskservice.EventStarted, Kind: "sms", Ready: fire, Time: fire},
		{Type: taskservice.EventSucceeded, Kind: "mail", Outcome: taskdv1.Outcome_OUTCOME_SUCCESS, Duration: 2 * time.Second},
		{Type: taskservice.EventFailed, Kind: "mail", Outcome: taskdv1.Outcome_OUTCOME_ERROR, Duration: time.Second},
		{Type: taskservice.EventInterrupted, Kind: "mail", Outcome: taskdv1.Outcome_OUTCOME_INTERRUPTED}, // resolved: no duration
		{Type: taskservice.EventDropped, Kind: "mail", Outcome: taskdv1.Outcome_OUTCOME_DROPPED, Duration: time.Second},
		{Type: taskservice.EventRetryScheduled, State: taskdv1.TaskState_TASK_STATE_RETRYING},
		{Type: taskservice.EventFinalized, State: taskdv1.TaskState_TASK_STATE_DEAD},
		{Type: taskservice.EventFinalized, State: taskdv1.TaskState_TASK_STATE_COMPLETED},
		{Type: taskservice.EventHandedOff},
		{Type: taskservice.EventHandedOff},
		{Type: taskservice.EventMoved},
	} {
		m.observe(ev)
	}
	obs := m.observer()
	obs.TxnItems(3)
	obs.TxnItems(1)
	obs.HandoffTaken(5 * time.Millisecond)
	obs.RebalanceMoves(7)
	obs.RebalanceMoves(3)
	for _, c := range []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"fire lag samples", m.fireLag, 1},
		{"mail queue waits", m.queueWait.WithLabelValues("mail").(prometheus.Histogram), 2},
		{"sms queue waits", m.queueWait.WithLabelValues("sms").(prometheus.Histogram), 1},
		{"mail SUCCESS durations", m.runDuration.WithLabelValues("mail", "SUCCESS").(prometheus.Histogram), 1},
		{"mail ERROR durations", m.runDuration.WithLabelValues("mail", "ERROR").(prometheus.Histogram), 1},
		{"mail INTERRUPTED durations", m.runDuration.WithLabelValues("mail", "INTERRUPTED").(prometheus.Histogram), 0},
		{"Txns", m.txnItems, 2},
		{"handoff times", m.handoffTime, 1},
	} {
		if got := histogramCount(t, c.c); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"retries", m.retries, 1},
		{"dead", m.dead, 1},
		{"dropped", m.dropped, 1},
		{"handoffs", m.handoffs, 2},
		{"moves", m.moves, 1},
		{"rebalance moves", m.rebalanced, 10},
		{"INTERRUPTED runs", m.runs.WithLabelValues("INTERRUPTED"), 1},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// histogramCount is the sample count of a histogram.
func histogramCount(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var pb dto.Metric
	if err := (<-ch).Write(&pb); err != nil {
		t.Fatal(err)
	}
	return float64(pb.GetHistogram().GetSampleCount())
}

// The etcd interceptor times every unary request by its operation and
// counts the failed ones by gRPC code.
func TestEtcdInterceptor(t *testing.T) {
	m := newMetrics()
	icpt := m.etcdInterceptor()
	for _, c := range []struct {
		method string
		err    error
	}{
		{"/etcdserverpb.KV/Txn", nil},
		{"/etcdserverpb.KV/Txn", status.Error(codes.Unavailable, "etcd away")},
		{"/etcdserverpb.KV/Range", nil},
		{"/etcdserverpb.Lease/LeaseGrant", status.Error(codes.DeadlineExceeded, "slow")},
	} {
		invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return c.err }
		if err := icpt(t.Context(), c.method, nil, nil, nil, invoker); err != c.err {
			t.Fatalf("%s: interceptor returned %v, want %v", c.method, err, c.err)
		}
	}
	for op, want := range map[string]float64{"Txn": 2, "Range": 1, "LeaseGrant": 1} {
		if got := histogramCount(t, m.etcdTime.WithLabelValues(op).(prometheus.Histogram)); got != want {
			t.Errorf("%s requests timed %v, want %v", op, got, want)
		}
	}
	for _, c := range []struct {
		op, code string
		want     float64
	}{{"Txn", "Unavailable", 1}, {"LeaseGrant", "DeadlineExceeded", 1}, {"Range", "OK", 0}} {
		if got := testutil.ToFloat64(m.etcdErrors.WithLabelValues(c.op, c.code)); got != c.want {
			t.Errorf("%s %s errors %v, want %v", c.op, c.code, got, c.want)
		}
	}
}

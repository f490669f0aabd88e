package main

import (
	"context"
	"path"
	"strings"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Buckets of the histograms, in seconds.
var (
	// runBuckets span a quick exec (a few ms) to an hour-long job.
	runBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
	// lagBuckets span a prompt start to a start held back by a busy node
	// or a missed lease renewal.
	lagBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	// etcdBuckets span one etcd request, local to a slow cluster.
	etcdBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
	// txnItemBuckets count the writes carried by one Txn.
	txnItemBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}
)

// metrics is what taskd exports on /metrics: counters and histograms fed
// by the node's events and observer, a collector reading the node's
// stats at scrape time, the etcd client's and the gRPC server's
// interceptors, and Go's runtime and process collectors.
type metrics struct {
	runs        *prometheus.CounterVec
	events      *prometheus.CounterVec
	misfires    prometheus.Counter
	runDuration *prometheus.HistogramVec
	fireLag     prometheus.Histogram
	queueWait   *prometheus.HistogramVec
	handoffs    prometheus.Counter
	handoffTime prometheus.Histogram
	moves       prometheus.Counter
	rebalanced  prometheus.Counter
	dropped     prometheus.Counter
	retries     prometheus.Counter
	dead        prometheus.Counter
	txnItems    prometheus.Histogram
	etcdTime    *prometheus.HistogramVec
	etcdErrors  *prometheus.CounterVec
	grpcServer  *grpcprom.ServerMetrics
}

func newMetrics() *metrics {
	return &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskd_runs_total", Help: "Runs finished, by outcome.",
		}, []string{"outcome"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskd_events_total", Help: "Task events, by type.",
		}, []string{"type"}),
		misfires: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskd_misfired_fire_times_total", Help: "Fire times resolved by a misfire policy (a MISFIRED event counts its fire times).",
		}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "taskd_run_duration_seconds", Help: "How long handlers of runs started on this node ran, by task kind and outcome.",
			Buckets: runBuckets,
		}, []string{"kind", "outcome"}),
		fireLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "taskd_fire_lag_seconds", Help: "Start of a run minus its fire time (runs with a fire time; run-now has none).",
			Buckets: lagBuckets,
		}),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "taskd_run_queue_wait_seconds", Help: "Start of a run's handler minus when the run became due on this node (its fire or retry time, or when the node queued its run-now request), by task kind: time waiting for a worker, the kind's --limit, the identity's earlier runs, or a proven lease.",
			Buckets: lagBuckets,
		}, []string{"kind"}),
		handoffs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskd_handoffs_total", Help: "Identities and tasks handed to this node (HANDED_OFF events).",
		}),
		handoffTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "taskd_handoff_duration_seconds", Help: "Time to take one handoff entry: load the identity or task it names.",
			Buckets: etcdBuckets,
		}),
		moves: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskd_identity_moves_total", Help: "Identities that left this node (moved away or unmapped; MOVED events).",
		}),
		rebalanced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskd_rebalance_moves_total", Help: "Identities this node moved away when the placement leader asked it to rebalance (--rebalance): to less loaded RUNNING nodes.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskd_dropped_commits_total", Help: "Run results not committed because the run's fence failed (the identity's owner settled the run; DROPPED).",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskd_retries_total", Help: "Retries scheduled after a failed attempt (RETRY_SCHEDULED events).",
		}),
		dead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskd_dead_tasks_total", Help: "Tasks that ended DEAD after a failed run: attempts used up, or a failure not retried with no fire time left (FINALIZED in state DEAD).",
		}),
		txnItems: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "taskd_etcd_txn_items", Help: "Writes (run starts, commits, schedules) carried by each Txn of the node's batcher.",
			Buckets: txnItemBuckets,
		}),
		etcdTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "taskd_etcd_request_duration_seconds", Help: "Unary etcd requests of the node's client, by operation (Range, Txn, Put, LeaseGrant, ...).",
			Buckets: etcdBuckets,
		}, []string{"op"}),
		etcdErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskd_etcd_request_errors_total", Help: "Unary etcd requests of the node's client that failed, by operation and gRPC code.",
		}, []string{"op", "code"}),
		grpcServer: grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
			grpcprom.WithHistogramBuckets(etcdBuckets))),
	}
}

// observe is the node's event listener.
func (m *metrics) observe(ev taskservice.Event) {
	m.events.WithLabelValues(string(ev.Type)).Inc()
	switch ev.Type {
	case taskservice.EventSucceeded, taskservice.EventFailed, taskservice.EventDropped, taskservice.EventInterrupted:
		outcome := strings.TrimPrefix(ev.Outcome.String(), "OUTCOME_")
		m.runs.WithLabelValues(outcome).Inc()
		if ev.Duration > 0 { // a run started here (not one resolved after a crash)
			m.runDuration.WithLabelValues(ev.Kind, outcome).Observe(ev.Duration.Seconds())
		}
		if ev.Type == taskservice.EventDropped {
			m.dropped.Inc()
		}
	case taskservice.EventStarted:
		if !ev.FireTime.IsZero() {
			m.fireLag.Observe(max(ev.Time.Sub(ev.FireTime), 0).Seconds())
		}
		if !ev.Ready.IsZero() {
			m.queueWait.WithLabelValues(ev.Kind).Observe(max(ev.Time.Sub(ev.Ready), 0).Seconds())
		}
	case taskservice.EventVetoed:
		m.runs.WithLabelValues("VETOED").Inc()
	case taskservice.EventMisfired:
		m.misfires.Add(float64(ev.Count))
	case taskservice.EventHandedOff:
		m.handoffs.Inc()
	case taskservice.EventMoved:
		m.moves.Inc()
	case taskservice.EventRetryScheduled:
		m.retries.Inc()
	case taskservice.EventFinalized:
		if ev.State == taskdv1.TaskState_TASK_STATE_DEAD {
			m.dead.Inc()
		}
	}
}

// observer is the node's observer: Txn sizes, handoff times and the
// leader's rebalancing moves.
func (m *metrics) observer() taskservice.Observer {
	return taskservice.Observer{
		TxnItems:       func(items int) { m.txnItems.Observe(float64(items)) },
		HandoffTaken:   func(took time.Duration) { m.handoffTime.Observe(took.Seconds()) },
		RebalanceMoves: func(moves int) { m.rebalanced.Add(float64(moves)) },
	}
}

// etcdInterceptor times the etcd client's unary requests by operation (the
// last element of the gRPC method, e.g. "/etcdserverpb.KV/Txn" is Txn).
func (m *metrics) etcdInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		began := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		op := path.Base(method)
		m.etcdTime.WithLabelValues(op).Observe(time.Since(began).Seconds())
		if err != nil {
			m.etcdErrors.WithLabelValues(op, status.Code(err).String()).Inc()
		}
		return err
	}
}

// grpcServerOptions are the gRPC server's interceptors for its metrics.
func (m *metrics) grpcServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(m.grpcServer.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(m.grpcServer.StreamServerInterceptor()),
	}
}

// registry returns a registry of every metric, node's stats included, with
// the gRPC server's methods listed at zero.
func (m *metrics) registry(node *taskservice.Node, gs *grpc.Server) *prometheus.Registry {
	m.grpcServer.InitializeMetrics(gs)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.runs, m.events, m.misfires, m.runDuration, m.fireLag, m.queueWait, m.handoffs, m.handoffTime,
		m.moves, m.rebalanced, m.dropped, m.retries, m.dead, m.txnItems, m.etcdTime, m.etcdErrors, m.grpcServer,
		&nodeCollector{node: node},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// nodeCollector reads the node's stats at each scrape.
type nodeCollector struct{ node *taskservice.Node }

var (
	tasksDesc = prometheus.NewDesc("taskd_tasks",
		"Tasks held by this node, by state: scheduled (next fire time ahead), due (fire time come, not started), running, retained (finished, kept for --retention).",
		[]string{"state"}, nil)
	coldDesc = prometheus.NewDesc("taskd_cold_tasks",
		"Scheduled tasks held without their record in memory (due more than --cold-after from now); their records are read again from etcd before they are due.", nil, nil)
	queueDesc = prometheus.NewDesc("taskd_timer_queue_entries",
		"Entries in the node's timer queue (scheduled, due and retained tasks).", nil, nil)
	identitiesDesc = prometheus.NewDesc("taskd_identities_owned",
		"Durable identities owned by this node.", nil, nil)
	leaseAgeDesc = prometheus.NewDesc("taskd_lease_renewal_age_seconds",
		"Time since the last acknowledged lease renewal was sent (absent before the first).", nil, nil)
	fencedDesc = prometheus.NewDesc("taskd_self_fenced",
		"1 while the node is RUNNING but self-fenced (its lease renewal is older than two thirds of the TTL: no run starts), else 0.", nil, nil)
	limitWaitDesc = prometheus.NewDesc("taskd_runs_waiting_for_limit",
		"Due runs waiting for their kind's --limit on this node, by limited kind (also counted in taskd_tasks{state=\"due\"}).", []string{"kind"}, nil)
	workerWaitDesc = prometheus.NewDesc("taskd_runs_waiting_for_worker",
		"Due runs of kinds only remote workers serve that wait on this node for a worker with a free slot, by kind (holding no run slot, their starts not written; also counted in taskd_tasks{state=\"due\"}).", []string{"kind"}, nil)
	unservedDesc = prometheus.NewDesc("taskd_runs_waiting_unserved",
		"Those of taskd_runs_waiting_for_worker whose kind nothing on this node serves now: no handler and no connected worker of the kind, by kind (0 for a --kinds kind none of whose runs waits). Logged once as it begins and once as it ends.", []string{"kind"}, nil)
	eventStreamsDesc = prometheus.NewDesc("taskd_event_streams",
		"WatchEvents streams this node's event watch feeds now (at most --max-event-streams); a stream from an old cursor counts once it has caught up.", nil, nil)
	stateDesc = prometheus.NewDesc("taskd_node_state",
		"1 for the node's life-cycle state (STARTING, RUNNING, DRAINING, STOPPED), 0 for the others.", []string{"state"}, nil)
)

// nodeStates are the values of taskd_node_state's label.
var nodeStates = []taskdv1.NodeState{
	taskdv1.NodeState_NODE_STATE_STARTING, taskdv1.NodeState_NODE_STATE_RUNNING,
	taskdv1.NodeState_NODE_STATE_DRAINING, taskdv1.NodeState_NODE_STATE_STOPPED,
}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{tasksDesc, queueDesc, coldDesc, identitiesDesc, leaseAgeDesc, fencedDesc, stateDesc, limitWaitDesc, workerWaitDesc, unservedDesc, eventStreamsDesc} {
		ch <- d
	}
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.node.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(tasksDesc, float64(s.Scheduled), "scheduled")
	gauge(tasksDesc, float64(s.Due), "due")
	gauge(tasksDesc, float64(s.Running), "running")
	gauge(tasksDesc, float64(s.Retained), "retained")
	gauge(queueDesc, float64(s.TimerQueue))
	gauge(coldDesc, float64(s.Cold))
	gauge(identitiesDesc, float64(s.Identities))
	gauge(eventStreamsDesc, float64(c.node.EventStreams()))
	if !s.LeaseRenewedAt.IsZero() {
		gauge(leaseAgeDesc, time.Since(s.LeaseRenewedAt).Seconds())
	}
	fenced := 0.0
	if s.SelfFenced {
		fenced = 1
	}
	gauge(fencedDesc, fenced)
	for kind, w := range s.WaitingForLimit {
		gauge(limitWaitDesc, float64(w), kind)
	}
	for kind, w := range s.WaitingForWorker {
		gauge(workerWaitDesc, float64(w), kind)
	}
	for kind, w := range s.WaitingUnserved {
		gauge(unservedDesc, float64(w), kind)
	}
	for _, st := range nodeStates {
		v := 0.0
		if st == s.State {
			v = 1
		}
		gauge(stateDesc, v, strings.TrimPrefix(st.String(), "NODE_STATE_"))
	}
}

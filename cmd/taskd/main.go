// Command taskd runs one taskd node: with no --etcd it starts an embedded
// single-member etcd in --data-dir; with --etcd it joins that cluster. It
// serves the taskd.v1 gRPC API (with reflection and health checking) on
// --listen, and the web console, metrics and a health check on --http
// (metrics and health on --metrics-listen instead when it is set).
//
// `taskd health` instead asks a running node whether it serves (exit 0) or
// not (exit 1): the health check of a container image with no shell.
//
// Run `taskd --help` for the options (contract §9).
//
// Lock: the run log's counts (runLog.mu, a leaf) only; everything else is
// the node's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/taskd/taskd/internal/buildinfo"
	"github.com/taskd/taskd/internal/console"
	"github.com/taskd/taskd/internal/grpcapi"
	"github.com/taskd/taskd/pkg/builtin"
	"github.com/taskd/taskd/pkg/config"
	"github.com/taskd/taskd/pkg/etcdembed"
	"github.com/taskd/taskd/pkg/taskservice"
	"github.com/taskd/taskd/pkg/tokens"
	"github.com/taskd/taskd/pkg/workers"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run is the whole server; it returns the process exit code.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	began := time.Now()
	if len(args) > 0 && args[0] == healthCommand {
		return runHealth(ctx, args[1:], environ, stdout, stderr)
	}
	if wantsVersion(args) {
		fmt.Fprintln(stdout, buildinfo.String("taskd"))
		return 0
	}
	cfg, err := config.Load(args, environ, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "taskd: configuration: %v\n", err)
		return 2
	}
	log := newLogger(cfg, stderr)
	if err := serve(ctx, cfg, log, began); err != nil {
		log.Error("taskd stopped with an error", "error", err)
		fmt.Fprintf(stderr, "taskd: %v\n", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, cfg config.Config, log hclog.Logger, began time.Time) (err error) {
	tlsSrv, err := setupTLS(cfg)
	if err != nil {
		return err
	}
	auth, err := setupAuth(cfg, log)
	if err != nil {
		return err
	}
	tracer, err := setupTracing(cfg)
	if err != nil {
		return fmt.Errorf("--otlp-endpoint: %w", err)
	}
	defer tracer.shutdown(log)
	endpoints := cfg.Etcd
	maxTxnOps, maxRequestBytes := 0, 0 // an external etcd: its defaults
	if len(endpoints) == 0 {
		maxTxnOps, maxRequestBytes = etcdembed.MaxTxnOps, etcdembed.MaxRequestBytes
		ec := etcdembed.Config{Dir: cfg.DataDir, ClientURL: cfg.EtcdListen}
		embeddedEtcdTLS(cfg, &ec)
		srv, err := etcdembed.Start(ctx, ec)
		if err != nil {
			return err
		}
		defer srv.Close()
		endpoints = []string{srv.ClientURL()}
		log.Info("embedded etcd ready", "client_url", srv.ClientURL(), "data_dir", cfg.DataDir)
	}
	metrics := newMetrics()
	etcdSec, err := etcdSecurity(cfg, endpoints)
	if err != nil {
		return err
	}
	cli, err := taskservice.DialEtcdSecure(endpoints, etcdSec, grpc.WithChainUnaryInterceptor(metrics.etcdInterceptor()))
	if err != nil {
		return err
	}
	defer cli.Close()
	if err := injectFaults(cli, log); err != nil { // only with -tags chaos
		return err
	}

	handlers := map[string]taskservice.Handler{}
	for _, kt := range cfg.Exec {
		handlers[kt.Kind] = builtin.NewExec(kt.Target, builtin.ExecOptions{Logger: log.Named("exec")})
	}
	for _, kt := range cfg.Webhook {
		handlers[kt.Kind] = builtin.NewWebhook(kt.Target, builtin.WebhookOptions{})
	}

	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on --listen %s: %w", cfg.Listen, err)
	}
	httpLis, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		lis.Close()
		return fmt.Errorf("listen on --http %s: %w", cfg.HTTP, err)
	}
	metricsLis := httpLis // /metrics and /healthz: on --http unless --metrics-listen
	if cfg.MetricsListen != "" {
		if metricsLis, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			lis.Close()
			httpLis.Close()
			return fmt.Errorf("listen on --metrics-listen %s: %w", cfg.MetricsListen, err)
		}
	}
	closeListeners := func() {
		lis.Close()
		httpLis.Close()
		metricsLis.Close()
	}
	// The console and pprof answer only under the node's own names.
	hosts := console.NewHostPolicy(httpLis.Addr(), consoleHostNames(cfg)...)

	runLog := &runLog{log: log}
	// Remote workers run the kinds this node has no handler for.
	pool, err := workers.New(workers.Config{Node: cfg.Name, Heartbeat: cfg.WorkerHeartbeat, MaxStreams: cfg.MaxWorkerStreams, Logger: log})
	if err != nil {
		closeListeners()
		return err
	}
	defer pool.Close()
	// The web console calls this node's own API, as a client, with the
	// viewer's token: the API's auth decides for it as for any client.
	ui, err := newConsole(cfg, lis.Addr(), tlsSrv.peer, hosts, log)
	if err != nil {
		closeListeners()
		return err
	}
	defer ui.Close()
	node, err := taskservice.New(taskservice.Config{
		Name:             cfg.Name,
		Replace:          cfg.Replace,
		Client:           cli,
		Prefix:           cfg.Prefix,
		Address:          advertisedAddress(cfg.Advertise, lis.Addr()),
		PeerTLS:          tlsSrv.peer,
		Handlers:         handlers,
		Remote:           pool,
		DeclaredKinds:    cfg.Kinds,
		Listeners:        []taskservice.Listener{metrics.observe, runLog.observe, pool.Observe, ui.listener()},
		Observer:         metrics.observer(),
		Logger:           log,
		TracerProvider:   tracer.provider(),
		LeaseTTL:         cfg.LeaseTTL,
		MisfireThreshold: cfg.MisfireThreshold,
		MaxCatchUp:       cfg.MaxCatchUp,
		MaxOverlap:       cfg.MaxOverlap,
		History:          cfg.History,
		Retention:        cfg.Retention,
		MaxPayload:       cfg.MaxPayload,
		EventBuffer:      cfg.EventBuffer,
		MaxEventStreams:  cfg.MaxEventStreams,
		Workers:          cfg.Workers,
		KindLimits:       cfg.LimitsByKind(),
		MaxTxnOps:        maxTxnOps,
		MaxRequestBytes:  maxRequestBytes,
		HandoffPeriod:    cfg.HandoffPeriod,
		HandoffStart:     orNone(cfg.HandoffStart),
		VoteDelay:        orNone(cfg.VoteDelay),
		RemoveDelay:      orNone(cfg.RemoveDelay),
		DrainTimeout:     orNone(cfg.DrainTimeout),
		LookAhead:        orNone(cfg.LookAhead),
		ColdAfter:        orNone(cfg.ColdAfter),

		// Rebalancing: only the placement leader's settings count.
		DisableRebalance:   !cfg.Rebalance,
		RebalanceInterval:  cfg.RebalanceInterval,
		RebalanceRate:      cfg.RebalanceRate,
		RebalanceTolerance: orNoPercent(cfg.RebalanceTolerance),
	})
	if err != nil {
		closeListeners()
		return err
	}

	// The API serves before the node dispatches (contract §2.5): requests are
	// accepted while STARTING, runs begin only once RUNNING.
	// A full batch (100 tasks at every limit, payload and data at
	// --max-payload) fits in one request; anything larger is refused
	// before it is read (docs/limits.md).
	gs := grpc.NewServer(append(append(append(append(tlsSrv.grpcOptions(), metrics.grpcServerOptions()...), auth.serverOptions()...), tracer.serverOptions()...),
		grpc.MaxRecvMsgSize(taskservice.MaxRequestBytes(cfg.MaxPayload)))...)
	taskdv1.RegisterTaskServiceServer(gs, grpcapi.NewTaskService(node))
	taskdv1.RegisterWorkerServiceServer(gs, pool.Service())
	storedTokens := tokens.NewFollower(cli, cfg.Prefix)
	auth.follow(storedTokens)
	taskdv1.RegisterTokenServiceServer(gs, tokens.NewServer(cli, cfg.Prefix, storedTokens, auth.fileTokens))
	tokensCtx, stopTokens := context.WithCancel(context.Background())
	tokensDone := make(chan struct{})
	go func() {
		defer close(tokensDone)
		storedTokens.Run(tokensCtx)
	}()
	defer func() { stopTokens(); <-tokensDone }()
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	hs.SetServingStatus(taskdv1.TaskService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
	// Announces which incarnation this process serves, so that a start
	// under the same name can tell this live process from a crashed one.
	hs.SetServingStatus(taskservice.IncarnationHealthService(node.Incarnation()), healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	grpcDone := make(chan error, 1)
	go func() { grpcDone <- gs.Serve(lis) }()

	// --http: the console and pprof, which reveal task data and are
	// guarded (Host, tokens, CSRF); /metrics and /healthz show none and are
	// open, on --http or apart on --metrics-listen.
	mux := http.NewServeMux()
	metricsMux := mux
	if metricsLis != httpLis {
		metricsMux = http.NewServeMux()
	}
	reg := metrics.registry(node, gs)
	reg.MustRegister(&workersCollector{pool: pool})
	metricsMux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if cfg.Pprof {
		mountPprof(mux, hosts, auth)
	}
	ui.mount(mux)
	var started atomic.Bool // Start has returned: the node is fully up
	metricsMux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		serving, reason := node.Health()
		if !serving || !started.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, reason)
	})
	hsrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	hsrv.RegisterOnShutdown(ui.Close) // ends the console's live-event streams
	go func() { _ = hsrv.Serve(tlsSrv.httpListener(httpLis)) }()
	msrv := hsrv
	if metricsMux != mux {
		msrv = &http.Server{Handler: metricsMux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = msrv.Serve(tlsSrv.httpListener(metricsLis)) }()
	}
	defer tlsSrv.watch(log)()
	defer auth.watch(log)()

	stopServers := func() {
		hs.Shutdown()
		pool.Close() // workers' streams end now, not at the graceful stop's timeout
		stopped := make(chan struct{})
		go func() { gs.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			gs.Stop()
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = hsrv.Shutdown(sctx)
		if msrv != hsrv {
			_ = msrv.Shutdown(sctx)
		}
		cancel()
	}

	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	err = node.Start(startCtx)
	cancel()
	if err != nil {
		stopServers()
		_ = node.Stop(context.Background())
		return fmt.Errorf("start node: %w", err)
	}
	started.Store(true)
	// gRPC health follows node.Health (not serving while self-fenced),
	// checked every tenth of the lease TTL.
	hf := &healthFollower{node: node, hs: hs, log: log}
	hf.update()
	healthCtx, stopHealth := context.WithCancel(context.Background())
	healthDone := make(chan struct{})
	go func() {
		defer close(healthDone)
		hf.follow(healthCtx, cfg.LeaseTTL/10)
	}()
	summaryDone := make(chan struct{})
	go func() {
		defer close(summaryDone)
		if cfg.LogSummary > 0 {
			runLog.follow(healthCtx, cfg.LogSummary)
		}
	}()
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		ui.run(healthCtx) // the console's chart feed
	}()
	log.Info("taskd running", "api", lis.Addr().String(), "advertised", advertisedAddress(cfg.Advertise, lis.Addr()), "http", httpLis.Addr().String(),
		"metrics", metricsLis.Addr().String(), "console", cfg.Console, "startup_ms", time.Since(began).Milliseconds())

	select {
	case <-ctx.Done():
		log.Info("draining on signal", "drain_timeout", cfg.DrainTimeout)
	case err := <-grpcDone:
		log.Error("gRPC server failed", "error", err)
	case <-node.Done():
		log.Info("node stopped by itself (drained or replaced)")
	}
	stopHealth()
	<-healthDone
	<-summaryDone
	<-consoleDone
	// Draining hands the identities to other RUNNING nodes before stopping
	// (with none, they stay mapped here for the next start).
	dctx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout+30*time.Second)
	defer cancel()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	stopErr := node.Drain(dctx)
	<-node.Done()
	stopServers()
	return stopErr
}

// healthFollower sets the gRPC health status of the API (and of the server
// as a whole) from node.Health, logging each change with its reason.
type healthFollower struct {
	node    *taskservice.Node
	hs      *health.Server
	log     hclog.Logger
	set     bool // a status was set
	serving bool // the status set last
}

// update sets the status now.
func (f *healthFollower) update() {
	serving, reason := f.node.Health()
	if f.set && serving == f.serving {
		return
	}
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if serving {
		st = healthpb.HealthCheckResponse_SERVING
		f.log.Info("health: serving", "reason", reason)
	} else {
		f.log.Warn("health: not serving", "reason", reason)
	}
	f.hs.SetServingStatus("", st)
	f.hs.SetServingStatus(taskdv1.TaskService_ServiceDesc.ServiceName, st)
	f.set, f.serving = true, serving
}

// follow updates the status every period until ctx ends.
func (f *healthFollower) follow(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			f.update()
		case <-ctx.Done():
			return
		}
	}
}

// orNoPercent maps an explicit 0% to the library's "none" (negative); the
// library reads zero as "default".
func orNoPercent(p int) int {
	if p == 0 {
		return -1
	}
	return p
}

// orNone maps an explicit zero delay to the library's "none" (negative);
// the library reads zero as "default".
func orNone(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

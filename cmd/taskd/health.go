package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// healthCommand is the first argument that makes taskd check a running node
// instead of running one.
const healthCommand = "health"

// runHealth is `taskd health`: it asks a running node whether it serves and
// exits 0 when it does, 1 when it does not or cannot be reached, 2 on bad
// arguments. It needs nothing but the taskd binary, so that it can be the
// HEALTHCHECK of an image with no shell. By default it asks the HTTP health
// endpoint (/healthz on --metrics-listen or else --http, taken from
// TASKD_METRICS_LISTEN or TASKD_HTTP when set); with --grpc
// it asks the gRPC health service on that address instead. An unspecified
// host (0.0.0.0, ::, empty) means this machine's loopback, so that the
// node's own listen addresses can be given as they are.
func runHealth(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("taskd health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	httpAddr := fs.String("http", envOr(environ, "TASKD_METRICS_LISTEN", envOr(environ, "TASKD_HTTP", "127.0.0.1:7421")),
		"the node's --metrics-listen or else --http address, whose /healthz is asked (env TASKD_METRICS_LISTEN, else TASKD_HTTP)")
	grpcAddr := fs.String("grpc", "", "ask the gRPC health service on this address (the node's --listen) instead of HTTP")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: taskd health [--http HOST:PORT | --grpc HOST:PORT] [--timeout DURATION]")
		fmt.Fprintln(stderr, "exits 0 when the node serves (RUNNING), 1 otherwise")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "taskd health: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "taskd health: --timeout must be > 0")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var serving bool
	var msg string
	var err error
	if *grpcAddr != "" {
		serving, msg, err = grpcHealth(ctx, dialable(*grpcAddr))
	} else {
		serving, msg, err = httpHealth(ctx, dialable(*httpAddr))
	}
	if err != nil {
		fmt.Fprintf(stdout, "UNREACHABLE: %v\n", err)
		return 1
	}
	if !serving {
		fmt.Fprintf(stdout, "NOT SERVING: %s\n", msg)
		return 1
	}
	fmt.Fprintf(stdout, "SERVING: %s\n", msg)
	return 0
}

// httpHealth asks http://addr/healthz: 200 is serving; the body is the
// node's reason.
func httpHealth(ctx context.Context, addr string) (serving bool, msg string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return false, "", err
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return false, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return false, "", err
	}
	msg = strings.TrimSpace(string(body))
	if msg == "" {
		msg = resp.Status
	}
	return resp.StatusCode == http.StatusOK, msg, nil
}

// grpcHealth asks the gRPC health service of addr for the whole server.
func grpcHealth(ctx context.Context, addr string) (serving bool, msg string, err error) {
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false, "", err
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(false))
	if err != nil {
		return false, "", err
	}
	st := resp.GetStatus()
	return st == healthpb.HealthCheckResponse_SERVING, "gRPC health " + st.String(), nil
}

// dialable replaces an unspecified host (empty, 0.0.0.0, ::) by loopback.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr // the dial reports it
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// envOr returns the value of name in environ, or def.
func envOr(environ []string, name, def string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, name+"="); ok && v != "" {
			return v
		}
	}
	return def
}

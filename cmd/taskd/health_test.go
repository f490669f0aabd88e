package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestHealthHTTP: taskd health follows /healthz's status and quotes its body.
func TestHealthHTTP(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
		code   int
		want   string
	}{
		{"serving", http.StatusOK, "running\n", 0, "SERVING: running"},
		{"not serving", http.StatusServiceUnavailable, "self-fenced: lease lost\n", 1, "NOT SERVING: self-fenced: lease lost"},
		{"not serving empty body", http.StatusServiceUnavailable, "", 1, "NOT SERVING: 503 Service Unavailable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/healthz" {
					http.NotFound(w, r)
					return
				}
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			defer srv.Close()
			addr := strings.TrimPrefix(srv.URL, "http://")
			var out, errOut bytes.Buffer
			code := run(context.Background(), []string{"health", "--http", addr}, nil, &out, &errOut)
			if code != c.code || strings.TrimSpace(out.String()) != c.want {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q", code, out.String(), errOut.String(), c.code, c.want)
			}
		})
	}
}

// TestHealthAddressFromEnvAndUnspecifiedHost: TASKD_HTTP gives the address
// and an unspecified host is asked on loopback.
func TestHealthAddressFromEnvAndUnspecifiedHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"health"}, []string{"TASKD_HTTP=0.0.0.0:" + port}, &out, &errOut)
	if code != 0 || strings.TrimSpace(out.String()) != "SERVING: ok" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

// TestHealthUnreachable: nothing listening is exit 1, not a hang.
func TestHealthUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	for _, args := range [][]string{{"health", "--http", addr}, {"health", "--grpc", addr}} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, nil, &out, &errOut)
		if code != 1 || !strings.HasPrefix(out.String(), "UNREACHABLE: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 UNREACHABLE", args, code, out.String(), errOut.String())
		}
	}
}

// TestHealthGRPC: with --grpc, the gRPC health service's status decides.
func TestHealthGRPC(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(lis) }()
	defer func() { gs.Stop(); <-done }()
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	for _, c := range []struct {
		status healthpb.HealthCheckResponse_ServingStatus
		code   int
		want   string
	}{
		{healthpb.HealthCheckResponse_NOT_SERVING, 1, "NOT SERVING: gRPC health NOT_SERVING"},
		{healthpb.HealthCheckResponse_SERVING, 0, "SERVING: gRPC health SERVING"},
	} {
		hs.SetServingStatus("", c.status)
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"health", "--grpc", "[::]:" + port}, nil, &out, &errOut)
		if code != c.code || strings.TrimSpace(out.String()) != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d %q", c.status, code, out.String(), errOut.String(), c.code, c.want)
		}
	}
}

// TestHealthBadArguments: exit 2 with the reason.
func TestHealthBadArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"health", "extra"}, `unexpected argument "extra"`},
		{[]string{"health", "--timeout", "0s"}, "--timeout must be > 0"},
		{[]string{"health", "--bogus"}, "bogus"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), c.args, nil, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %q", c.args, code, errOut.String(), c.want)
		}
	}
}

package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// healthz returns the status code and body of the process's /healthz.
func (p *taskd) healthz() (int, string, error) {
	ctx, cancel := rpcCtx()
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.httpAddr+"/healthz", nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body)), err
}

// waitHealth waits until /healthz answers code with a body containing
// want, and the gRPC health of the API (and of the server) is grpcWant.
func waitHealth(t *testing.T, p *taskd, hc healthpb.HealthClient, code int, want string, grpcWant healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	eventually(t, waitLong, fmt.Sprintf("health %d %q and gRPC %s", code, want, grpcWant), func() error {
		got, body, err := p.healthz()
		if err != nil {
			return err
		}
		if got != code || !strings.Contains(body, want) {
			return fmt.Errorf("/healthz %d %q", got, body)
		}
		for _, svc := range []string{"", "taskd.v1.TaskService"} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
			cancel()
			if err != nil {
				return err
			}
			if resp.GetStatus() != grpcWant {
				return fmt.Errorf("gRPC health of %q is %s", svc, resp.GetStatus())
			}
		}
		return nil
	})
}

// TestHealthFollowsTheLease kills the etcd of a running node: while the
// node cannot renew its lease, /healthz answers 503 with a reason naming the
// lease and the gRPC health is NOT_SERVING; once etcd is back, both return
// to serving.
func TestHealthFollowsTheLease(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, "/health/")
	a := startNode(t, cl.opts("node-a"))
	conn, err := grpc.NewClient(a.listen, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	waitHealth(t, a, hc, http.StatusOK, "RUNNING", healthpb.HealthCheckResponse_SERVING)

	cl.etcd.Kill()
	waitHealth(t, a, hc, http.StatusServiceUnavailable, "lease", healthpb.HealthCheckResponse_NOT_SERVING)
	_, body, _ := a.healthz()
	t.Logf("/healthz while etcd is down: %s", body)

	cl.etcd = taskservicetest.StartEtcdProcess(t, cl.etcd.Dir, cl.etcd.URL)
	waitHealth(t, a, hc, http.StatusOK, "RUNNING", healthpb.HealthCheckResponse_SERVING)
	if a.exited() {
		t.Fatalf("node-a exited with code %d", a.exitCode())
	}
}

// A running taskd answers the standard gRPC health check (SERVING), lists
// taskd.v1.TaskService through server reflection (what grpcurl uses), and
// serves /healthz and Prometheus /metrics on --http.
func TestHealthReflectionAndMetrics(t *testing.T) {
	t.Parallel()
	p := startNode(t, nodeOptions{name: "obs", dataDir: t.TempDir(), extra: []string{"--exec", "fast=true"}})
	conn, err := grpc.NewClient(p.listen, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	for _, svc := range []string{"", "taskd.v1.TaskService"} {
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health of %q: %v %v, want SERVING", svc, resp, err)
		}
	}

	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{ListServices: ""},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "taskd.v1.TaskService") {
		t.Errorf("reflection lists %v, want taskd.v1.TaskService", names)
	}

	// One run, so the run counter has a sample.
	task := schedule(t, p.Client(), &taskdv1.TaskSpec{Identity: "obs", Kind: "fast",
		Scope: taskdv1.Scope_SCOPE_IDENTITY, Triggers: onceAfter(0)})
	waitTaskState(t, p.Client(), "obs", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	// Without --pprof there are no profiles.
	if resp, err := http.Get("http://" + p.httpAddr + "/debug/pprof/"); err != nil {
		t.Errorf("GET /debug/pprof/: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /debug/pprof/ without --pprof: %s, want 404", resp.Status)
		}
	}
	for path, want := range map[string]string{"/healthz": "RUNNING", "/metrics": `taskd_runs_total{outcome="SUCCESS"} 1`} {
		resp, err := http.Get("http://" + p.httpAddr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %q, want 200 containing %q", path, resp.StatusCode, body, want)
		}
	}
}

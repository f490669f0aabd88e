package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// collector is an OTLP/gRPC trace collector that keeps every span it gets.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (c *collector) named(name string) []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range c.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// startCollector serves a collector on a free loopback port.
func startCollector(t *testing.T) (*collector, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, c)
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(lis) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	return c, lis.Addr().String()
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			if v, ok := kv.Value.Value.(*commonpb.AnyValue_IntValue); ok {
				return fmt.Sprint(v.IntValue)
			}
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// TestTracingEndToEnd runs taskd with --otlp-endpoint: the schedule request
// continues the caller's trace, the run's span links to it and reaches the
// exec command as TRACEPARENT, and both spans reach the collector.
func TestTracingEndToEnd(t *testing.T) {
	col, addr := startCollector(t)
	d := startTaskd(t, "--otlp-endpoint", addr, "--otlp-insecure",
		"--exec", `traced=printf '%s' "$TRACEPARENT"`)
	conn, err := grpc.NewClient(d.api, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := taskdv1.NewTaskServiceClient(conn)

	const callerTrace, callerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	resp, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{
		Identity: "tracey", Kind: "traced", Scope: taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}},
	}})
	if err != nil {
		t.Fatalf("schedule: %v", err)
	}
	var task *taskdv1.Task
	tst.Eventually(t, 30*time.Second, func() bool {
		r, err := c.GetTask(context.Background(), &taskdv1.GetTaskRequest{Identity: "tracey", TaskId: resp.Task.Id})
		if err != nil {
			t.Fatalf("get task: %v", err)
		}
		task = r.Task
		return task.State == taskdv1.TaskState_TASK_STATE_COMPLETED
	}, "task %s to complete", resp.Task.Id)
	hist, err := c.ListRuns(context.Background(), &taskdv1.ListRunsRequest{Identity: "tracey", TaskId: task.Id})
	if err != nil || len(hist.Runs) != 1 {
		t.Fatalf("list runs: %v (%d runs)", err, len(hist.GetRuns()))
	}
	// Stopping taskd flushes its spans to the collector.
	d.stop()
	<-d.exited

	schedules := col.named("taskd.v1.TaskService/ScheduleTask")
	if len(schedules) != 1 {
		t.Fatalf("%d ScheduleTask spans, want 1", len(schedules))
	}
	sched := schedules[0]
	if hex.EncodeToString(sched.TraceId) != callerTrace || hex.EncodeToString(sched.ParentSpanId) != callerSpan {
		t.Errorf("schedule span in trace %x under %x, want the caller's %s under %s", sched.TraceId, sched.ParentSpanId, callerTrace, callerSpan)
	}
	runs := col.named("taskd.run traced")
	if len(runs) != 1 {
		t.Fatalf("%d run spans, want 1", len(runs))
	}
	run := runs[0]
	if len(run.Links) != 1 || string(run.Links[0].TraceId) != string(sched.TraceId) || string(run.Links[0].SpanId) != string(sched.SpanId) {
		t.Errorf("run span links %v, want one to the schedule span %x/%x", run.Links, sched.TraceId, sched.SpanId)
	}
	want := fmt.Sprintf("00-%x-%x-01", run.TraceId, run.SpanId)
	if msg := task.LastRun.GetMessage(); msg != want {
		t.Errorf("exec command saw TRACEPARENT %q, want the run span's %q", msg, want)
	}
	for k, v := range map[string]string{"taskd.identity": "tracey", "taskd.task_id": task.Id, "taskd.run": "1",
		"taskd.fence": hist.Runs[0].Fence, "taskd.outcome": "OUTCOME_SUCCESS"} {
		if got := attr(run, k); got != v {
			t.Errorf("run span %s = %q, want %q", k, got, v)
		}
	}
}

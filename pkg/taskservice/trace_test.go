package taskservice_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// storedRecord reads a task's record straight from etcd.
func (h *harness) storedRecord(id, taskID string) *storev1.TaskRecord {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := h.etcd.Client(h.t).Get(ctx, keyspace.New("/taskd/").Task(id, taskID))
	if err != nil || len(resp.Kvs) != 1 {
		h.t.Fatalf("read record of %s: %v (%d keys)", taskID, err, len(resp.Kvs))
	}
	rec := &storev1.TaskRecord{}
	if err := proto.Unmarshal(resp.Kvs[0].Value, rec); err != nil {
		h.t.Fatalf("decode record of %s: %v", taskID, err)
	}
	return rec
}

// scheduleWith schedules s through the node's library API with ctx.
func (h *harness) scheduleWith(ctx context.Context, s *taskdv1.TaskSpec) *taskdv1.Task {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := h.node.Schedule(ctx, []*taskdv1.TaskSpec{s})
	if err != nil {
		h.t.Fatalf("schedule: %v", err)
	}
	return out[0].Task
}

func TestRunSpanLinksToScheduleSpan(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	seen := make(chan trace.SpanContext, 1)
	h := newHarness(t, func(c *taskservice.Config) {
		c.TracerProvider = tp
		c.Handlers["traced"] = taskservice.HandlerFunc(func(ctx context.Context, _ *taskservice.Run) error {
			seen <- trace.SpanContextFromContext(ctx)
			return nil
		})
	})

	reqCtx, reqSpan := tp.Tracer("test").Start(context.Background(), "ScheduleTask")
	task := h.scheduleWith(reqCtx, spec("tracey", "traced", now()))
	reqSpan.End()
	h.waitState("tracey", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	handlerSaw := <-seen

	// The span ends once the run's commit returns, a moment after the
	// state the test waited for is stored.
	var runs []sdktrace.ReadOnlySpan
	tst.Eventually(t, 10*time.Second, func() bool {
		runs = runs[:0]
		for _, s := range sr.Ended() {
			if s.Name() == "taskd.run traced" {
				runs = append(runs, s)
			}
		}
		return len(runs) >= 1
	}, "the run span to end")
	if len(runs) != 1 {
		t.Fatalf("%d run spans ended, want 1", len(runs))
	}
	run := runs[0]
	if !run.SpanContext().Equal(handlerSaw) {
		t.Errorf("handler's context carries span %v, want the run span %v", handlerSaw, run.SpanContext())
	}
	if run.SpanContext().TraceID() == reqSpan.SpanContext().TraceID() {
		t.Errorf("run span is in the request's trace; want a trace of its own, linked")
	}
	links := run.Links()
	if len(links) != 1 || links[0].SpanContext.TraceID() != reqSpan.SpanContext().TraceID() ||
		links[0].SpanContext.SpanID() != reqSpan.SpanContext().SpanID() {
		t.Errorf("run span links %v, want one link to the schedule span %v", links, reqSpan.SpanContext())
	}
	got := map[attribute.Key]string{}
	for _, kv := range run.Attributes() {
		got[kv.Key] = kv.Value.String()
	}
	runs0 := h.runs("tracey", task.Id)[0]
	for k, want := range map[attribute.Key]string{
		"taskd.identity": "tracey",
		"taskd.task_id":  task.Id,
		"taskd.kind":     "traced",
		"taskd.run":      "1",
		"taskd.attempt":  "1",
		"taskd.fence":    runs0.Fence,
		"taskd.node":     "n1",
		"taskd.outcome":  taskdv1.Outcome_OUTCOME_SUCCESS.String(),
	} {
		if got[k] != want {
			t.Errorf("run span attribute %s = %q, want %q", k, got[k], want)
		}
	}
}

func TestUntracedScheduleStoresNoTraceparent(t *testing.T) {
	h := newHarness(t, nil)
	_, noopSpan := noop.NewTracerProvider().Tracer("test").Start(context.Background(), "ScheduleTask")
	sdk := sdktrace.NewTracerProvider()
	defer func() { _ = sdk.Shutdown(context.Background()) }()
	tracedCtx, traced := sdk.Tracer("test").Start(context.Background(), "ScheduleTask")
	sc := traced.SpanContext()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"no span", context.Background(), ""},
		{"no-op tracer", trace.ContextWithSpan(context.Background(), noopSpan), ""},
		{"traced", tracedCtx, fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := h.scheduleWith(tc.ctx, spec("plain", "rec", after(time.Hour)))
			if got := h.storedRecord("plain", task.Id).Traceparent; got != tc.want {
				t.Errorf("stored traceparent %q, want %q", got, tc.want)
			}
		})
	}
	traced.End()
}

// TestOverlappingRunsLinkToTheScheduleSpan: an overlapping run (a child
// task) carries its parent's traceparent, so its run span links to the
// request that scheduled the parent too.
func TestOverlappingRunsLinkToTheScheduleSpan(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	release := make(chan struct{})
	h := newHarness(t, func(c *taskservice.Config) { c.TracerProvider = tp; c.MaxOverlap = 1 })
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}
	reqCtx, reqSpan := tp.Tracer("test").Start(context.Background(), "ScheduleTask")
	iv := 50 * time.Millisecond
	s := spec("ov", "rec", every(time.Now().Add(iv), iv, 2))
	s.AllowOverlap = true
	task := h.scheduleWith(reqCtx, s)
	reqSpan.End()
	tst.Eventually(t, 10*time.Second, func() bool {
		h.rec.mu.Lock()
		defer h.rec.mu.Unlock()
		return len(h.rec.calls) >= 2
	}, "the task's run and an overlapping run in flight")
	close(release)
	h.waitState("ov", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	ctx, cancel := rpc()
	defer cancel()
	list, err := h.node.Client.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "ov", PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	parentTP := h.storedRecord("ov", task.Id).Traceparent
	if parentTP == "" {
		t.Fatal("the traced schedule stored no traceparent")
	}
	children := 0
	for _, tk := range list.Tasks {
		if tk.Id == task.Id {
			continue
		}
		children++
		h.waitState("ov", tk.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
		if got := h.storedRecord("ov", tk.Id).Traceparent; got != parentTP {
			t.Errorf("overlapping run %s stored traceparent %q, want the parent's %q", tk.Id, got, parentTP)
		}
	}
	if children != 1 {
		t.Fatalf("%d overlapping runs, want 1", children)
	}
	linked := 0
	tst.Eventually(t, 10*time.Second, func() bool {
		linked = 0
		for _, sp := range sr.Ended() {
			if sp.Name() == "taskd.run rec" {
				if l := sp.Links(); len(l) == 1 && l[0].SpanContext.SpanID() == reqSpan.SpanContext().SpanID() {
					linked++
				}
			}
		}
		return linked >= 2
	}, "both run spans to end")
	if linked != 2 {
		t.Fatalf("%d run spans link to the schedule span, want 2 (the task's run and the overlapping run)", linked)
	}
}

package runs

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// tracerName names the instrumentation scope of the run spans: the public
// package a user embeds, as before the run path moved here, so that trace
// queries by scope keep working.
const tracerName = "github.com/taskd/taskd/pkg/taskservice"

// traceContext reads and writes the W3C traceparent form. It is used
// directly, not through the global propagator, so the stored form does not
// depend on how the process configured OpenTelemetry.
var traceContext = propagation.TraceContext{}

// TraceParent returns the W3C traceparent of the span ctx carries, or ""
// when ctx carries no valid span context (no tracing configured, or the
// caller was not traced). Handlers pass it on to what they call.
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c.Get("traceparent")
}

// linkOf parses a stored traceparent into a link; ok is false when it is
// empty or malformed (a bad field only loses the link, never the run).
func linkOf(traceparent string) (link trace.Link, ok bool) {
	if traceparent == "" {
		return trace.Link{}, false
	}
	ctx := traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: sc}, true
}

// tracer is the node's tracer: Config.TracerProvider, else the global one
// (a no-op unless the process configured OpenTelemetry).
func (n *Path) tracer() trace.Tracer {
	tp := n.cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// startRunSpan starts the span of one run as a child of ctx, linked to the
// span of the request that scheduled the task; the returned context carries
// it, so the handler sees it.
func (n *Path) startRunSpan(ctx context.Context, run *Call, traceparent string) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("taskd.identity", run.Identity),
			attribute.String("taskd.task_id", run.TaskID),
			attribute.String("taskd.kind", run.Kind),
			attribute.Int64("taskd.run", run.RunNumber),
			attribute.Int("taskd.attempt", run.Attempt),
			attribute.String("taskd.fence", run.Fence.String()),
			attribute.String("taskd.node", run.Node),
		),
	}
	if l, ok := linkOf(traceparent); ok {
		opts = append(opts, trace.WithLinks(l))
	}
	return n.tracer().Start(ctx, "taskd.run "+run.Kind, opts...)
}

// endRunSpan records the run's outcome on its span and ends it.
func endRunSpan(span trace.Span, res *runResult) {
	span.SetAttributes(attribute.String("taskd.outcome", res.Outcome.String()))
	if res.Outcome != taskdv1.Outcome_OUTCOME_SUCCESS {
		span.SetStatus(codes.Error, res.Message)
	}
	span.End()
}

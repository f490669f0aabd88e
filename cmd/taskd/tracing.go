package main

import (
	"context"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/taskd/taskd/pkg/config"
)

// tracing is the node's OpenTelemetry tracer provider; with no
// --otlp-endpoint it is off and nothing is traced.
type tracing struct {
	tp *sdktrace.TracerProvider // nil when off
}

// setupTracing starts the OTLP/gRPC exporter when --otlp-endpoint is set.
// The exporter dials lazily: a collector that is down loses spans, it never
// delays or fails the node.
func setupTracing(cfg config.Config) (*tracing, error) {
	if cfg.OTLPEndpoint == "" {
		return &tracing{}, nil
	}
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(cfg.OTLPEndpoint)}
	if cfg.OTLPInsecure {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	exp, err := otlptracegrpc.New(context.Background(), opts...)
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", "taskd"),
		attribute.String("service.instance.id", cfg.Name),
	)
	return &tracing{tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// provider is the tracer provider the node makes its run spans with; nil
// (the global no-op provider) when tracing is off.
func (t *tracing) provider() trace.TracerProvider {
	if t.tp == nil {
		return nil
	}
	return t.tp
}

// tracedMethod limits request spans to the task API: health checks and
// reflection would only add noise.
func tracedMethod(info *stats.RPCTagInfo) bool {
	return strings.HasPrefix(info.FullMethodName, "/taskd.v1.TaskService/")
}

// serverOptions give every task API request a span (a schedule request's
// span is stored with its tasks, and each run links to it), continuing a
// caller's W3C trace context when the request carries one.
func (t *tracing) serverOptions() []grpc.ServerOption {
	if t.tp == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(t.tp),
		otelgrpc.WithPropagators(propagation.TraceContext{}),
		otelgrpc.WithFilter(tracedMethod),
	))}
}

// shutdown flushes the spans still buffered, waiting at most 5 s for the
// collector.
func (t *tracing) shutdown(log hclog.Logger) {
	if t.tp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.tp.Shutdown(ctx); err != nil {
		log.Warn("flushing trace spans failed", "error", err)
	}
}

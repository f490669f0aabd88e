//go:build unix

package builtin

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// tracedContext returns a context carrying a recording span of a real SDK
// provider, and the traceparent that span must travel as.
func tracedContext(t *testing.T) (context.Context, string) {
	t.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "run")
	t.Cleanup(func() { span.End() })
	sc := span.SpanContext()
	return ctx, fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// traceCases are a traced run (its span travels) and an untraced one (no
// header, no variable).
func traceCases(t *testing.T) []struct {
	name string
	ctx  context.Context
	want string
} {
	traced, tp := tracedContext(t)
	// A span context that is not valid (no tracing configured) sends nothing.
	untraced := trace.ContextWithSpanContext(context.Background(), trace.SpanContext{})
	return []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"traced", traced, tp},
		{"untraced", untraced, ""},
	}
}

func TestWebhookSendsTraceparent(t *testing.T) {
	for _, tc := range traceCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan http.Header, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- r.Header.Clone()
			}))
			defer srv.Close()
			if _, err := runWebhook(tc.ctx, NewWebhook(srv.URL, WebhookOptions{Client: srv.Client()}), testRun("p")); err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			h := <-got
			if v, ok := h["Traceparent"]; tc.want == "" && ok {
				t.Errorf("traceparent header %q sent, want none", v)
			}
			if v := h.Get("traceparent"); v != tc.want {
				t.Errorf("traceparent header = %q, want %q", v, tc.want)
			}
		})
	}
}

// TestExecGetsTraceparent: the command sees the run span's traceparent when
// the run is traced, and none when it is not, even when the node itself was
// started with TRACEPARENT and TRACESTATE in its environment (a stale
// trace the command must not join).
func TestExecGetsTraceparent(t *testing.T) {
	t.Setenv("TRACEPARENT", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	t.Setenv("TRACESTATE", "vendor=node")
	for _, tc := range traceCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := runExec(t, tc.ctx, NewExec(`printf '%s' "${TRACEPARENT-unset}${TRACESTATE+ tracestate}"`, ExecOptions{}), testRun(""))
			if err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			want := tc.want
			if want == "" {
				want = "unset"
			}
			if msg != want {
				t.Errorf("TRACEPARENT = %q, want %q", msg, want)
			}
		})
	}
}

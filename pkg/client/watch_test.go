package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/resume"
	"github.com/taskd/taskd/pkg/client"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// endedStreams ends the next WatchEvents streams as its ends say, before
// they send anything: with an error, or (nil) cleanly.
type endedStreams struct {
	mu   sync.Mutex
	ends []error
}

func (e *endedStreams) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	e.mu.Lock()
	if info.FullMethod != watchMethod || len(e.ends) == 0 {
		e.mu.Unlock()
		return h(srv, ss)
	}
	end := e.ends[0]
	e.ends = e.ends[1:]
	e.mu.Unlock()
	return end
}

// Watch opens one stream and does not reopen it: its events come with
// their API form, a stream the node ends says so (io.EOF, or its error
// with the cursor to go on from), and a bad filter is refused naming the
// field before anything is sent.
func TestWatch(t *testing.T) {
	etcd := tst.StartEtcd(t)
	ended := &endedStreams{ends: []error{
		resume.Status(codes.ResourceExhausted, "behind", resume.ReasonReaderBehind, "5.3"),
		nil,
	}}
	s := startNode(t, etcd.Client(t), "n1", grpc.ChainStreamInterceptor(ended.stream))
	c := dial(t, []string{s.addr})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	behind, err := c.Watch(ctx, client.EventFilter{Identity: "w"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = behind.Recv()
	if cursor, ok := resume.Cursor(err); status.Code(err) != codes.ResourceExhausted || !ok || cursor != "5.3" {
		t.Fatalf("a stream ended behind: %v (cursor %q, %v), want RESOURCE_EXHAUSTED with cursor 5.3", err, cursor, ok)
	}
	var e *client.Error
	if !errors.As(err, &e) || e.Op != "Watch" {
		t.Fatalf("the stream's error %v is not the client's", err)
	}
	behind.Close()
	stopped, err := c.Watch(ctx, client.EventFilter{Identity: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stopped.Recv(); err != io.EOF {
		t.Fatalf("a stream the node ended cleanly: %v, want io.EOF", err)
	}
	stopped.Close()

	w, err := c.Watch(ctx, client.EventFilter{Identity: "w", Types: []client.EventType{"SCHEDULED"}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	task, _, err := c.Schedule(ctx, later("w"))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := w.Recv()
	if err != nil || len(evs) != 1 || evs[0].Type != "SCHEDULED" || evs[0].TaskID != task.ID || evs[0].Proto.GetTaskId() != task.ID || evs[0].Cursor == "" {
		t.Fatalf("Recv: %v, %+v; want the SCHEDULED event of %s", err, evs, task.ID)
	}

	if _, err := c.Watch(ctx, client.EventFilter{Types: []client.EventType{"LATE"}}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("Watch of an unknown type: %v, want ErrInvalidArgument", err)
	}
}

// With WithLazyConnect, New returns at once though nothing listens, and
// the first call fails with the reason the connection gave.
func TestLazyConnect(t *testing.T) {
	addr := closedAddr(t)
	start := time.Now()
	c, err := client.New(context.Background(), []string{addr}, client.WithLazyConnect(), client.WithRetries(2, 10*time.Millisecond, 10*time.Millisecond))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer c.Close()
	if d := time.Since(start); d > time.Second {
		t.Fatalf("New took %v: it waited for the endpoint", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.Nodes(ctx)
	var e *client.Error
	if !errors.Is(err, client.ErrUnavailable) || !errors.As(err, &e) || e.Attempts != 2 || !containsAny(e.Message, "connection refused", "connect:") {
		t.Fatalf("Nodes: %v, want UNAVAILABLE after 2 attempts saying why", err)
	}
}

// closedAddr is a loopback address nothing listens at.
func closedAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// containsAny reports whether s holds one of subs.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

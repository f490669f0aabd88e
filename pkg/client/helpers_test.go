package client_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/client"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// fault makes the server fail chosen calls after applying them: the
// request takes effect, and its answer is replaced by an error (lost).
type fault struct {
	mu      sync.Mutex
	method  string // full method name, e.g. /taskd.v1.TaskService/ScheduleTask
	left    int    // calls still to fail
	timeout bool   // hold the answer until the caller's deadline instead of failing
	calls   atomic.Int64
}

func (f *fault) arm(method string, n int, timeout bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.method, f.left, f.timeout = method, n, timeout
}

func (f *fault) take(method string) (hit, timeout bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if method != f.method || f.left == 0 {
		return false, false
	}
	f.left--
	return true, f.timeout
}

func (f *fault) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	f.calls.Add(1)
	resp, err := h(ctx, req)
	if hit, timeout := f.take(info.FullMethod); hit && err == nil {
		if timeout {
			<-ctx.Done() // the answer comes too late for the caller
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Error(codes.Unavailable, "injected: the answer was lost after the request was applied")
	}
	return resp, err
}

const (
	scheduleMethod  = "/taskd.v1.TaskService/ScheduleTask"
	scheduleMany    = "/taskd.v1.TaskService/ScheduleTasks"
	runNowMethod    = "/taskd.v1.TaskService/RunTaskNow"
	watchMethod     = "/taskd.v1.TaskService/WatchEvents"
	listTasksMethod = "/taskd.v1.TaskService/ListTasks"
)

func dial(t *testing.T, endpoints []string, opts ...client.Option) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.New(ctx, endpoints, opts...)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func countTasks(t *testing.T, c *client.Client, identity string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := 0
	for _, err := range c.List(ctx, client.ListFilter{Identity: identity}) {
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		n++
	}
	return n
}

func later(identity string) client.TaskSpec {
	return client.TaskSpec{Identity: identity, Kind: "report", Scope: client.ScopeIdentity, Triggers: []client.Trigger{client.After(time.Hour)}}
}

// faultyNode starts a node on a new etcd whose answers the fault loses
// once armed, and a client of it with opts that retries quickly (five
// attempts); ctx bounds the test's calls.
func faultyNode(t *testing.T, opts ...client.Option) (f *fault, c *client.Client, ctx context.Context) {
	t.Helper()
	f = &fault{}
	s := startNode(t, tst.StartEtcd(t).Client(t), "n1", grpc.ChainUnaryInterceptor(f.unary))
	c = dial(t, []string{s.addr}, append(opts, client.WithRetries(5, 10*time.Millisecond, 100*time.Millisecond))...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return f, c, ctx
}

// removedDespiteLostAnswer checks a removal (del, of method) whose first
// answer is lost: the retry finds the thing gone and succeeds, after two
// calls; get then finds it gone, and a first removal of it is
// ErrNotFound. what names the thing.
func removedDespiteLostAnswer(t *testing.T, f *fault, method, what string, del, get func() error) {
	t.Helper()
	f.arm(method, 1, false)
	before := f.calls.Load()
	if err := del(); err != nil {
		t.Fatalf("delete of the %s whose first answer is lost: %v", what, err)
	}
	if n := f.calls.Load() - before; n != 2 {
		t.Fatalf("the server saw %d calls, want 2 (the lost answer and the retry)", n)
	}
	if err := get(); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("the deleted %s: %v, want ErrNotFound", what, err)
	}
	if err := del(); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("a first delete of a gone %s: %v, want ErrNotFound", what, err)
	}
}

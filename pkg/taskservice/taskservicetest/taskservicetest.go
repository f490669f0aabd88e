// Package taskservicetest starts real parts for tests: an embedded etcd on
// a loopback port, taskd nodes over it, and their gRPC API on loopback.
// Everything is stopped by t.Cleanup, in the order that keeps etcd's close
// fast (clients first).
package taskservicetest

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/taskd/taskd/internal/grpcapi"
	"github.com/taskd/taskd/pkg/etcdembed"
	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Etcd is an embedded etcd for one test.
type Etcd struct {
	Server *etcdembed.Server
	URL    string
	Dir    string
}

// StartEtcd starts a single-member etcd with fast raft timings in a
// temporary directory on a free loopback port.
func StartEtcd(t testing.TB) *Etcd {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "etcd")
	return StartEtcdAt(t, dir, "http://127.0.0.1:0")
}

// StartEtcdAt starts (or restarts) an embedded etcd on dir and clientURL.
func StartEtcdAt(t testing.TB, dir, clientURL string) *Etcd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: clientURL, Fast: true})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	e := &Etcd{Server: srv, URL: srv.ClientURL(), Dir: dir}
	t.Cleanup(srv.Close)
	return e
}

// StartEtcdLimited starts a single-member etcd like StartEtcd that refuses
// requests over maxRequestBytes (etcd's --max-request-bytes), for tests of
// writes too large for the server.
func StartEtcdLimited(t testing.TB, maxRequestBytes uint) *Etcd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "etcd")
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0", Fast: true, MaxRequestBytes: maxRequestBytes})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(srv.Close)
	return &Etcd{Server: srv, URL: srv.ClientURL(), Dir: dir}
}

// Client returns a new etcd client of e, closed at cleanup (before etcd).
func (e *Etcd) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := taskservice.DialEtcd([]string{e.URL})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Node is a started node with its gRPC API served on loopback.
type Node struct {
	*taskservice.Node
	Addr   string
	Client taskdv1.TaskServiceClient
	conn   *grpc.ClientConn
	server *grpc.Server
}

// NewNode creates a node (not started) over cli with cfg (Name, Handlers
// and any other fields set by the test; Client, Address and Logger are
// filled in) and serves its API. Start it with StartNode or n.Start.
func NewNode(t testing.TB, cli *clientv3.Client, cfg taskservice.Config) *Node {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	cfg.Client = cli
	cfg.Address = lis.Addr().String()
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "taskd", Level: hclog.Warn, Output: testWriter{t}})
	}
	n, err := taskservice.New(cfg)
	if err != nil {
		t.Fatalf("new node: %v", err)
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(n.MaxRequestBytes()))
	taskdv1.RegisterTaskServiceServer(gs, grpcapi.NewTaskService(n))
	go func() { _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc client: %v", err)
	}
	tn := &Node{Node: n, Addr: lis.Addr().String(), Client: taskdv1.NewTaskServiceClient(conn), conn: conn, server: gs}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
		_ = conn.Close()
		gs.Stop()
	})
	return tn
}

// StartNode creates, serves and starts a node.
func StartNode(t testing.TB, cli *clientv3.Client, cfg taskservice.Config) *Node {
	t.Helper()
	n := NewNode(t, cli, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatalf("start node %s: %v", cfg.Name, err)
	}
	return n
}

// Eventually polls cond every 5 ms until it holds or timeout passes, then
// fails the test with msg. It is a wait on a condition, not a sleep.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting: "+msg, append([]any{timeout}, args...)...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

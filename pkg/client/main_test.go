package client_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/taskd/taskd/internal/grpcapi"
	"github.com/taskd/taskd/pkg/etcdembed"
	"github.com/taskd/taskd/pkg/taskservice"
	"github.com/taskd/taskd/pkg/workers"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// endpoint is the gRPC address of the node the examples talk to, started by
// TestMain on an embedded etcd. Yours is a taskd node's --listen address,
// such as 127.0.0.1:7420.
var endpoint string

func TestMain(m *testing.M) {
	stop, err := startExampleNode()
	if err != nil {
		fmt.Fprintln(os.Stderr, "client tests:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// exampleHandlers are the kinds the examples' node runs.
func exampleHandlers() map[string]taskservice.Handler {
	return map[string]taskservice.Handler{
		"email": taskservice.HandlerFunc(func(_ context.Context, run *taskservice.Run) error {
			return taskservice.Warning(fmt.Sprintf("sent %q to %s", run.Payload, run.Identity))
		}),
		"report": taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil }),
	}
}

// startExampleNode starts an embedded etcd and one node serving the API
// on loopback, and returns what stops them.
func startExampleNode() (stop func(), err error) {
	dir, err := os.MkdirTemp("", "taskd-client-test-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	etcd, err := etcdembed.Start(ctx, etcdembed.Config{Dir: dir, ClientURL: "http://127.0.0.1:0", Fast: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cli, err := taskservice.DialEtcd([]string{etcd.ClientURL()})
	if err != nil {
		etcd.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	s, err := serve(ctx, cli, "example", exampleHandlers())
	if err != nil {
		cli.Close()
		etcd.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	endpoint = s.addr
	return func() {
		s.stop()
		cli.Close()
		etcd.Close()
		os.RemoveAll(dir)
	}, nil
}

// server is a started node with its API served on a loopback port.
type server struct {
	node *taskservice.Node
	pool *workers.Pool
	addr string
	gs   *grpc.Server
}

// serve creates and starts a node named name and serves its API with the
// given server options (interceptors that inject faults).
func serve(ctx context.Context, cli *clientv3.Client, name string, handlers map[string]taskservice.Handler, opts ...grpc.ServerOption) (*server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "taskd", Level: hclog.Warn})
	pool, err := workers.New(workers.Config{Node: name, Logger: log})
	if err != nil {
		lis.Close()
		return nil, err
	}
	node, err := taskservice.New(taskservice.Config{
		Name:      name,
		Client:    cli,
		Address:   lis.Addr().String(),
		Handlers:  handlers,
		Remote:    pool, // remote workers run the kinds it has no handler for
		Listeners: []taskservice.Listener{pool.Observe},
		Logger:    log,
	})
	if err != nil {
		lis.Close()
		return nil, err
	}
	gs := grpc.NewServer(opts...)
	taskdv1.RegisterTaskServiceServer(gs, grpcapi.NewTaskService(node))
	taskdv1.RegisterWorkerServiceServer(gs, pool.Service())
	go func() { _ = gs.Serve(lis) }()
	if err := node.Start(ctx); err != nil {
		gs.Stop()
		return nil, err
	}
	return &server{node: node, pool: pool, addr: lis.Addr().String(), gs: gs}, nil
}

func (s *server) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.pool.Close()
	s.gs.Stop()
	_ = s.node.Stop(ctx)
}

// startNode is serve for one test: the node stops at cleanup.
func startNode(t *testing.T, cli *clientv3.Client, name string, opts ...grpc.ServerOption) *server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := serve(ctx, cli, name, exampleHandlers(), opts...)
	if err != nil {
		t.Fatalf("start node %s: %v", name, err)
	}
	t.Cleanup(s.stop)
	return s
}

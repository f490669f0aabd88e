package workers_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/taskd/taskd/internal/grpcapi"
	"github.com/taskd/taskd/pkg/client"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	"github.com/taskd/taskd/pkg/workers"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// node is a started node with a worker pool, serving TaskService and
// WorkerService on loopback.
type node struct {
	*taskservice.Node
	pool *workers.Pool
	addr string
	cli  *clientv3.Client
}

// nodeSetup is what a test may change in startNode's node.
type nodeSetup struct {
	pool workers.Config
	// remote, when set, is the node's Remote, given the pool.
	remote func(*workers.Pool) taskservice.Remote
	// node, when set, edits the node's configuration.
	node func(*taskservice.Config)
}

func startNode(t testing.TB, cli *clientv3.Client, name string, heartbeat time.Duration, handlers map[string]taskservice.Handler, opts ...func(*nodeSetup)) *node {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "taskd", Level: hclog.Warn, Output: tWriter{t}})
	setup := nodeSetup{pool: workers.Config{Node: name, Heartbeat: heartbeat, Logger: log}}
	for _, o := range opts {
		o(&setup)
	}
	pool, err := workers.New(setup.pool)
	if err != nil {
		t.Fatal(err)
	}
	var remote taskservice.Remote = pool
	if setup.remote != nil {
		remote = setup.remote(pool)
	}
	cfg := taskservice.Config{
		Name: name, Client: cli, Address: lis.Addr().String(), Handlers: handlers,
		Remote: remote, Listeners: []taskservice.Listener{pool.Observe}, Logger: log,
		LeaseTTL: 2 * time.Second,
	}
	if setup.node != nil {
		setup.node(&cfg)
	}
	n, err := taskservice.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	taskdv1.RegisterTaskServiceServer(gs, grpcapi.NewTaskService(n))
	taskdv1.RegisterWorkerServiceServer(gs, pool.Service())
	go func() { _ = gs.Serve(lis) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pool.Close()
		gs.Stop()
		_ = n.Stop(ctx)
	})
	return &node{Node: n, pool: pool, addr: lis.Addr().String(), cli: cli}
}

// nodeAndClient starts node n1 (heartbeat, opts as startNode's) on a new
// etcd and dials a client of it; ctx bounds the test's calls.
func nodeAndClient(t *testing.T, heartbeat time.Duration, opts ...func(*nodeSetup)) (*node, *client.Client, context.Context) {
	t.Helper()
	n := startNode(t, tst.StartEtcd(t).Client(t), "n1", heartbeat, nil, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return n, dialClient(t, n.addr), ctx
}

// waitRuns waits for the task to end and returns it with its runs.
func waitRuns(ctx context.Context, t *testing.T, c *client.Client, identity, taskID string) (*client.Task, []client.Run) {
	t.Helper()
	done, err := c.Wait(ctx, identity, taskID)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := c.Runs(ctx, identity, taskID)
	if err != nil {
		t.Fatal(err)
	}
	return done, runs
}

// busyWorker connects a worker of kind job (concurrency 1) to the node at
// addr, schedules a task of it that times out in a minute, and waits until
// the worker holds the task's run, which it never answers: its slot stays
// taken.
func busyWorker(ctx context.Context, t *testing.T, c *client.Client, addr string) *rawWorker {
	t.Helper()
	busy, _, err := dialRaw(t, addr, &taskdv1.WorkerHello{Worker: "busy", Kinds: []string{"job"}, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Schedule(ctx, spec("blocker", "job", func(s *client.TaskSpec) { s.Timeout = time.Minute })); err != nil {
		t.Fatal(err)
	}
	busy.recvUntil(func(m *taskdv1.WorkResponse) bool { return m.GetRun() != nil })
	return busy
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func dialClient(t testing.TB, addrs ...string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.New(ctx, addrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// runWorker runs w until the test ends (or stop is called) and waits for it.
func runWorker(t *testing.T, w *client.Worker) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("worker: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

// rawWorker is a worker driven by hand, message by message, over a real
// stream: for the protocol's edges.
type rawWorker struct {
	t      *testing.T
	stream taskdv1.WorkerService_WorkClient
	cancel context.CancelFunc
}

func dialRaw(t *testing.T, addr string, hello *taskdv1.WorkerHello) (*rawWorker, *taskdv1.WorkResponse, error) {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = cc.Close() })
	stream, err := taskdv1.NewWorkerServiceClient(cc).Work(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Hello{Hello: hello}}); err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	return &rawWorker{t: t, stream: stream, cancel: cancel}, first, err
}

func (r *rawWorker) recv() *taskdv1.WorkResponse {
	r.t.Helper()
	m, err := r.stream.Recv()
	if err != nil {
		r.t.Fatalf("recv: %v", err)
	}
	return m
}

// recvUntil reads messages (answering nothing) until keep says stop.
func (r *rawWorker) recvUntil(keep func(*taskdv1.WorkResponse) bool) *taskdv1.WorkResponse {
	r.t.Helper()
	for {
		if m := r.recv(); keep(m) {
			return m
		}
	}
}

func (r *rawWorker) send(o *taskdv1.WorkOutcome) {
	r.t.Helper()
	if err := r.stream.Send(&taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Outcome{Outcome: o}}); err != nil {
		r.t.Fatalf("send: %v", err)
	}
}

func clientv3LeaseID(id int64) clientv3.LeaseID { return clientv3.LeaseID(id) }

func startBenchNode(b *testing.B, cli *clientv3.Client, handlers map[string]taskservice.Handler) *node {
	return startNode(b, cli, "bench", workers.DefaultHeartbeat, handlers)
}

func dialBench(b *testing.B, addr string) *client.Client { return dialClient(b, addr) }

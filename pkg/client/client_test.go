package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/devcerts"
	"github.com/taskd/taskd/pkg/client"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// A Schedule whose first attempt is stored but whose answer is lost
// (UNAVAILABLE, or too late for the attempt's deadline) is retried and
// returns the stored task: one task, not two. The same fault on the raw
// stub without a key stores two, so the fault is the one that would
// duplicate.
func TestScheduleRetriedAfterTheAnswerIsLostStoresOneTask(t *testing.T) {
	f, c, ctx := faultyNode(t, client.WithCallTimeout(time.Second))

	for _, tc := range []struct {
		name     string
		identity string
		timeout  bool
	}{{"unavailable", "lost-answer", false}, {"deadline", "late-answer", true}} {
		t.Run(tc.name, func(t *testing.T) {
			f.arm(scheduleMethod, 1, tc.timeout)
			before := f.calls.Load()
			task, existing, err := c.Schedule(ctx, later(tc.identity))
			if err != nil {
				t.Fatalf("Schedule: %v", err)
			}
			if got := f.calls.Load() - before; got != 2 {
				t.Fatalf("the server saw %d calls, want 2 (the failed attempt and its retry)", got)
			}
			if !existing {
				t.Error("existing = false: the retry did not find the task its first attempt stored")
			}
			if !strings.HasPrefix(task.Spec.IdempotencyKey, "client-") {
				t.Errorf("idempotency key %q was not made by the client", task.Spec.IdempotencyKey)
			}
			if n := countTasks(t, c, tc.identity); n != 1 {
				t.Fatalf("%d tasks stored, want 1", n)
			}
		})
	}

	t.Run("raw stub without a key duplicates", func(t *testing.T) {
		f.arm(scheduleMethod, 1, false)
		spec := &taskdv1.TaskSpec{Identity: "raw", Kind: "report", Scope: taskdv1.Scope_SCOPE_IDENTITY,
			Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}}}
		for attempt := 1; ; attempt++ {
			_, err := c.API().ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec})
			if err == nil {
				break
			}
			if status.Code(err) != codes.Unavailable || attempt > 1 {
				t.Fatalf("attempt %d: %v", attempt, err)
			}
		}
		if n := countTasks(t, c, "raw"); n != 2 {
			t.Fatalf("%d tasks stored by a keyless retry, want 2: the fault did not apply the first attempt", n)
		}
	})

	t.Run("batch", func(t *testing.T) {
		f.arm(scheduleMany, 1, false)
		specs := make([]client.TaskSpec, 10)
		for i := range specs {
			specs[i] = later("batch")
		}
		tasks, err := c.ScheduleMany(ctx, specs)
		if err != nil {
			t.Fatalf("ScheduleMany: %v", err)
		}
		if len(tasks) != 10 {
			t.Fatalf("%d tasks returned, want 10", len(tasks))
		}
		if n := countTasks(t, c, "batch"); n != 10 {
			t.Fatalf("%d tasks stored, want 10", n)
		}
	})
}

// RunNow could run twice if retried after its request was applied, so it
// is not: the caller gets the error, and the task gets one manual run.
func TestRunNowIsNotRetriedAfterItMayHaveApplied(t *testing.T) {
	f, c, ctx := faultyNode(t)
	task, _, err := c.Schedule(ctx, later("manual"))
	if err != nil {
		t.Fatal(err)
	}
	f.arm(runNowMethod, 1, false)
	_, err = c.RunNow(ctx, "manual", task.ID)
	var e *client.Error
	if !errors.Is(err, client.ErrUnavailable) || !errors.As(err, &e) || e.Attempts != 1 {
		t.Fatalf("RunNow: %v, want UNAVAILABLE after 1 attempt", err)
	}
	tst.Eventually(t, 20*time.Second, func() bool {
		runs, err := c.Runs(ctx, "manual", task.ID)
		return err == nil && len(runs) == 1 && runs[0].Manual
	}, "the manual run was not recorded")
	// The task's next run stays an hour away: nothing else runs it.
	got, err := c.Get(ctx, "manual", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.RunCount != 1 {
		t.Fatalf("run count %d, want 1", got.RunCount)
	}
}

// When the endpoint in use stops answering, calls go to the next one.
func TestFailsOverToTheNextEndpoint(t *testing.T) {
	etcd := tst.StartEtcd(t)
	a := startNode(t, etcd.Client(t), "a")
	b := startNode(t, etcd.Client(t), "b")
	c := dial(t, []string{a.addr, b.addr}, client.WithCallTimeout(2*time.Second), client.WithRetries(5, 10*time.Millisecond, 200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := c.Endpoint()
	down, up := a, b
	if first == b.addr {
		down, up = b, a
	}
	down.gs.Stop() // its connections close; the node itself keeps running
	for i := range 20 {
		task, _, err := c.Schedule(ctx, later("failover"))
		if err != nil {
			t.Fatalf("Schedule %d after %s stopped: %v", i, first, err)
		}
		if _, err := c.Get(ctx, "failover", task.ID); err != nil {
			t.Fatalf("Get %d: %v", i, err)
		}
	}
	if c.Endpoint() != up.addr {
		t.Fatalf("calls go to %s, want %s", c.Endpoint(), up.addr)
	}
	if n := countTasks(t, c, "failover"); n != 20 {
		t.Fatalf("%d tasks, want 20", n)
	}
}

// brokenStreams ends the first n WatchEvents streams with UNAVAILABLE
// after their first message.
type brokenStreams struct {
	left    atomic.Int64
	streams atomic.Int64
}

type cutStream struct {
	grpc.ServerStream
	sent int
}

func (s *cutStream) SendMsg(m any) error {
	if s.sent == 1 {
		return status.Error(codes.Unavailable, "injected: stream cut")
	}
	s.sent++
	return s.ServerStream.SendMsg(m)
}

func (b *brokenStreams) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if info.FullMethod != watchMethod {
		return h(srv, ss)
	}
	b.streams.Add(1)
	if b.left.Add(-1) >= 0 {
		return h(srv, &cutStream{ServerStream: ss})
	}
	return h(srv, ss)
}

// A watch whose stream breaks resumes from the last event's cursor: it
// yields the same events, in the same order, as an unbroken watch.
func TestEventsResumeFromTheCursorAfterABrokenStream(t *testing.T) {
	etcd := tst.StartEtcd(t)
	var b brokenStreams
	s := startNode(t, etcd.Client(t), "n1", grpc.ChainStreamInterceptor(b.stream))
	c := dial(t, []string{s.addr}, client.WithRetries(5, 10*time.Millisecond, 100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	every := client.Every(50 * time.Millisecond)
	every.Count = 8 // runs apart in time: events in several messages
	task, _, err := c.Schedule(ctx, client.TaskSpec{Identity: "watched", Kind: "report", Scope: client.ScopeIdentity, Triggers: []client.Trigger{every}})
	if err != nil {
		t.Fatal(err)
	}
	watch := func() []string {
		var cursors []string
		for e, err := range c.Events(ctx, client.EventFilter{Identity: "watched", TaskID: task.ID, Cursor: client.From(task)}) {
			if err != nil {
				t.Fatalf("Events: %v", err)
			}
			cursors = append(cursors, string(e.Type)+"@"+e.Cursor)
			if e.Type == "FINALIZED" {
				break
			}
		}
		return cursors
	}
	b.left.Store(3)
	broken := watch()
	if b.streams.Load() < 4 {
		t.Fatalf("%d streams opened, want at least 4 (3 cut)", b.streams.Load())
	}
	whole := watch()
	if strings.Join(broken, " ") != strings.Join(whole, " ") {
		t.Fatalf("a watch cut 3 times saw\n%v\nan unbroken one\n%v", broken, whole)
	}
	if len(whole) < 8*3 {
		t.Fatalf("only %d events for 8 runs: %v", len(whole), whole)
	}
}

// Bad input is refused before anything is sent, naming the field; a
// refusal by the server names its field too.
func TestBadInputNamesTheField(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		endpoints []string
		opts      []client.Option
		field     string
	}{
		{nil, nil, "endpoints"},
		{[]string{"localhost"}, nil, "endpoints[0]"},
		{[]string{endpoint}, []client.Option{client.WithCallTimeout(0)}, "WithCallTimeout"},
		{[]string{endpoint}, []client.Option{client.WithRetries(0, time.Millisecond, time.Second)}, "WithRetries.attempts"},
		{[]string{endpoint}, []client.Option{client.WithRetries(3, time.Second, time.Millisecond)}, "WithRetries"},
	} {
		_, err := client.New(ctx, tc.endpoints, tc.opts...)
		if !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.field+": ") {
			t.Errorf("New(%v): %v, want INVALID_ARGUMENT naming %s", tc.endpoints, err, tc.field)
		}
	}
	c := dial(t, []string{endpoint})
	for _, err := range c.List(ctx, client.ListFilter{States: []client.State{"SCHEDULED", "DONE"}}) {
		if !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), "States[1]: ") {
			t.Errorf("List: %v, want INVALID_ARGUMENT naming States[1]", err)
		}
		break
	}
	for _, err := range c.Events(ctx, client.EventFilter{Types: []client.EventType{"NOPE"}}) {
		if !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), "Types[0]: ") {
			t.Errorf("Events: %v, want INVALID_ARGUMENT naming Types[0]", err)
		}
		break
	}
	if _, err := c.ScheduleMany(ctx, make([]client.TaskSpec, client.MaxBatch+1)); !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), "specs: ") {
		t.Errorf("ScheduleMany of %d: %v", client.MaxBatch+1, err)
	}
	spec := later("bad")
	spec.Scope = ""
	if _, _, err := c.Schedule(ctx, spec); !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), "task.scope") {
		t.Errorf("Schedule without a scope: %v", err)
	}
	if _, err := c.Get(ctx, "bad", "01m8mx19rx1hj7mgnxe477btw0"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("Get of a missing task: %v, want NOT_FOUND", err)
	}
}

// New fails, naming the endpoints, when none answers within the dial
// timeout.
func TestNewFailsWhenNoEndpointAnswers(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	_, err = client.New(context.Background(), []string{addr}, client.WithDialTimeout(300*time.Millisecond))
	if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("New: %v, want UNAVAILABLE naming %s", err, addr)
	}
}

// WithToken sends the bearer token with every call.
func TestTokenIsSentWithEveryCall(t *testing.T) {
	etcd := tst.StartEtcd(t)
	var seen sync.Map
	check := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer tok.secret" {
			return nil, status.Errorf(codes.Unauthenticated, "authorization %q", got)
		}
		seen.Store(info.FullMethod, true)
		return h(ctx, req)
	}
	s := startNode(t, etcd.Client(t), "n1", grpc.ChainUnaryInterceptor(check))
	c := dial(t, []string{s.addr}, client.WithToken("tok.secret"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := c.Schedule(ctx, later("token")); err != nil {
		t.Fatal(err)
	}
	if n := countTasks(t, c, "token"); n != 1 {
		t.Fatalf("%d tasks", n)
	}
	if _, ok := seen.Load(listTasksMethod); !ok {
		t.Fatal("ListTasks did not carry the token")
	}
}

// WithTLS connects over TLS and checks the node's certificate: a client
// that trusts the node's CA works, one that trusts another CA does not
// connect.
func TestTLS(t *testing.T) {
	ca, err := devcerts.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue("node", devcerts.LeafOptions{IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	etcd := tst.StartEtcd(t)
	s := startNode(t, etcd.Client(t), "n1", grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	trust := x509.NewCertPool()
	trust.AppendCertsFromPEM(ca.CertPEM)
	c := dial(t, []string{s.addr}, client.WithTLS(&tls.Config{RootCAs: trust}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := c.Schedule(ctx, later("tls")); err != nil {
		t.Fatalf("Schedule over TLS: %v", err)
	}
	other, err := devcerts.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	wrong := x509.NewCertPool()
	wrong.AppendCertsFromPEM(other.CertPEM)
	if _, err := client.New(ctx, []string{s.addr}, client.WithTLS(&tls.Config{RootCAs: wrong}), client.WithDialTimeout(time.Second)); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("New trusting another CA: %v, want UNAVAILABLE", err)
	}
	if _, err := client.New(ctx, []string{s.addr}, client.WithDialTimeout(time.Second)); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("New in plain text to a TLS node: %v, want UNAVAILABLE", err)
	}
}

// A node that requires client certificates, dialled without one: New's
// error says the node asked for one and none was given
// (MissingClientCertificate), whichever of "certificate required", "broken
// pipe" or "EOF" the refused connection showed; with the certificate, calls
// work, and a failure of another kind does not claim the certificate is
// missing.
func TestTLSClientCertificate(t *testing.T) {
	ca, err := devcerts.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	pair := func(cn string, o devcerts.LeafOptions) tls.Certificate {
		leaf, err := ca.Issue(cn, o)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	serverCert := pair("node", devcerts.LeafOptions{IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	clientCert := pair("app", devcerts.LeafOptions{Client: true})
	trust := x509.NewCertPool()
	trust.AppendCertsFromPEM(ca.CertPEM)
	etcd := tst.StartEtcd(t)
	s := startNode(t, etcd.Client(t), "n1", grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{serverCert}, ClientCAs: trust, ClientAuth: tls.RequireAndVerifyClientCert,
	})))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 5 { // which error the client sees first is a race
		_, err := client.New(ctx, []string{s.addr}, client.WithTLS(&tls.Config{RootCAs: trust}), client.WithDialTimeout(time.Second))
		if !errors.Is(err, client.ErrUnavailable) || !client.MissingClientCertificate(err) {
			t.Fatalf("New without a client certificate: %v, want UNAVAILABLE saying none was given", err)
		}
	}
	c := dial(t, []string{s.addr}, client.WithTLS(&tls.Config{RootCAs: trust, Certificates: []tls.Certificate{clientCert}}))
	if _, _, err := c.Schedule(ctx, later("mtls")); err != nil {
		t.Fatalf("Schedule with a client certificate: %v", err)
	}
	if _, err := client.New(ctx, []string{s.addr}, client.WithDialTimeout(time.Second)); err == nil || client.MissingClientCertificate(err) {
		t.Fatalf("New in plain text: %v, want an error that does not blame a client certificate", err)
	}
}

// A loop body slower than the events come: the node ends the stream
// (RESOURCE_EXHAUSTED with the cursor to resume from) rather than buffer
// for it, and Events goes on from that cursor: it yields the same events as
// a watch that kept up, and no error.
func TestEventsGoOnAfterTheReaderFellBehind(t *testing.T) {
	const tasks = 60
	etcd := tst.StartEtcd(t)
	var streams, behind atomic.Int64
	s := startNode(t, etcd.Client(t), "n1", grpc.ChainStreamInterceptor(
		func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			err := h(srv, ss)
			if info.FullMethod == watchMethod {
				streams.Add(1)
				if status.Code(err) == codes.ResourceExhausted {
					behind.Add(1)
				}
			}
			return err
		}))
	// The slow reader's connection keeps gRPC's initial windows, so what
	// it does not read stays on the node.
	c := dial(t, []string{s.addr}, client.WithDialOptions(grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10)))
	other := dial(t, []string{s.addr})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, _, err := other.Schedule(ctx, later("slow"))
	if err != nil {
		t.Fatal(err)
	}
	from := client.From(first)
	// Each run's message repeats its 32 KiB payload: about 64 KiB of
	// events per task, 60 times the node's 1 MiB buffer in all.
	payload := []byte(strings.Repeat("p", 32<<10))
	watch := func(c *client.Client, slow bool) []string {
		var got []string
		done := 0
		for e, err := range c.Events(ctx, client.EventFilter{Identity: "slow", Cursor: from}) {
			if err != nil {
				t.Fatalf("Events: %v", err)
			}
			if slow && len(got) == 0 {
				for i := range tasks {
					spec := client.TaskSpec{Identity: "slow", Kind: "email", Scope: client.ScopeIdentity,
						Triggers: []client.Trigger{client.Now()}, Payload: payload}
					if _, _, err := other.Schedule(ctx, spec); err != nil {
						t.Fatalf("schedule %d: %v", i, err)
					}
				}
				tst.Eventually(t, time.Minute, func() bool {
					n := 0
					for _, err := range other.List(ctx, client.ListFilter{Identity: "slow", States: []client.State{"COMPLETED"}}) {
						if err == nil {
							n++
						}
					}
					return n == tasks
				}, "the %d tasks to complete", tasks)
			}
			got = append(got, string(e.Type)+"@"+e.Cursor)
			if e.Type == "FINALIZED" {
				if done++; done == tasks {
					break
				}
			}
		}
		return got
	}
	slow := watch(c, true)
	if behind.Load() == 0 {
		t.Fatalf("no stream was ended for its reader falling behind (%d streams): the test did not test it", streams.Load())
	}
	kept := watch(other, false)
	if strings.Join(slow, " ") != strings.Join(kept, " ") {
		t.Fatalf("a reader that fell behind saw %d events\n%v\none that kept up %d\n%v", len(slow), slow, len(kept), kept)
	}
	t.Logf("%d events; the slow reader's streams: %d, %d ended RESOURCE_EXHAUSTED", len(slow), streams.Load(), behind.Load())
}

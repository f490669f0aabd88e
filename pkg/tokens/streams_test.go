package tokens_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	"github.com/taskd/taskd/pkg/tokens"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// waitingWorkers is a WorkerService whose Work stream welcomes the worker
// and then waits for its context to end, as a stream handler does.
type waitingWorkers struct {
	taskdv1.UnimplementedWorkerServiceServer
}

func (waitingWorkers) Work(s taskdv1.WorkerService_WorkServer) error {
	if _, err := s.Recv(); err != nil {
		return err
	}
	if err := s.Send(&taskdv1.WorkResponse{Msg: &taskdv1.WorkResponse_Welcome{Welcome: &taskdv1.WorkerWelcome{Node: "n"}}}); err != nil {
		return err
	}
	<-s.Context().Done()
	return status.FromContextError(s.Context().Err()).Err()
}

// TestRevokedStreamsEnd: through the real interceptors, the streams of a
// stored token end with UNAUTHENTICATED when it is revoked, or when its
// record changes so that it no longer grants the stream's verb; the
// registry of open streams holds only the streams that are open (one that
// the client closes leaves it); streams of other tokens are untouched.
func TestRevokedStreamsEnd(t *testing.T) {
	e := tst.StartEtcd(t)
	const prefix = "/tok-streams/"
	root := "root.root-secret"
	srv := startTokenServer(t, e, prefix, tokens.FileLine("root", "root-secret", tokens.Verbs, nil))
	create := func(id string) string {
		resp, err := srv.client.CreateToken(as(t, root), &taskdv1.CreateTokenRequest{Id: id, Verbs: []string{"work"}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetBearer()
	}
	w, w2 := create("w"), create("w2")
	hello := &taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Hello{Hello: &taskdv1.WorkerHello{Worker: "w", Kinds: []string{"k"}, Concurrency: 1}}}
	open := func(bearer string) (taskdv1.WorkerService_WorkClient, context.CancelFunc) {
		t.Helper()
		ctx, cancel := context.WithCancel(as(t, bearer))
		s, err := taskdv1.NewWorkerServiceClient(srv.conn).Work(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(hello); err != nil {
			t.Fatal(err)
		}
		if m, err := s.Recv(); err != nil || m.GetWelcome() == nil {
			t.Fatalf("open with %s: %v %v", bearer, m, err)
		}
		return s, cancel
	}
	wantRevoked := func(what string, s taskdv1.WorkerService_WorkClient) {
		t.Helper()
		_, err := s.Recv()
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "revoked") {
			t.Fatalf("%s: %v, want Unauthenticated saying revoked", what, err)
		}
	}
	openCount := func(id string, want int) func() bool {
		return func() bool { return srv.auth.OpenStreams(id) == want }
	}

	a, _ := open(w)
	b, _ := open(w)
	c, closeC := open(w)
	changed, _ := open(w2)
	kept, closeKept := open(root)
	defer closeKept()
	if n := srv.auth.OpenStreams("w"); n != 3 {
		t.Fatalf("%d open streams of w, want 3", n)
	}
	closeC()
	if _, err := c.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("closed stream: %v", err)
	}
	waitFor(t, "the closed stream to leave the registry", openCount("w", 2))

	if _, err := srv.client.RevokeToken(as(t, root), &taskdv1.RevokeTokenRequest{Id: "w"}); err != nil {
		t.Fatal(err)
	}
	wantRevoked("first stream of w", a)
	wantRevoked("second stream of w", b)
	waitFor(t, "the revoked streams to leave the registry", openCount("w", 0))

	// w2's record is rewritten with the same secret but the read verb only:
	// its Work stream is no longer granted.
	cli := e.Client(t)
	got, err := cli.Get(as(t, root), prefix+"token/w2")
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("read w2: %v", err)
	}
	rec := &storev1.TokenRecord{}
	if err := proto.Unmarshal(got.Kvs[0].Value, rec); err != nil {
		t.Fatal(err)
	}
	rec.Token.Verbs = []string{"read"}
	v, _ := proto.Marshal(rec)
	if _, err := cli.Put(as(t, root), prefix+"token/w2", string(v)); err != nil {
		t.Fatal(err)
	}
	wantRevoked("the stream of a token that lost its verb", changed)

	if n := srv.auth.OpenStreams("root"); n != 1 {
		t.Fatalf("%d open streams of root, want 1 (kept)", n)
	}
	if err := kept.Send(hello); err != nil {
		t.Fatalf("the kept stream: %v", err)
	}
}

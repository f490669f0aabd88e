package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/client"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	"github.com/taskd/taskd/pkg/tokens"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

const (
	getIdentityMethod = "/taskd.v1.TaskService/GetIdentity"
	createTokenMethod = "/taskd.v1.TokenService/CreateToken"
	revokeTokenMethod = "/taskd.v1.TokenService/RevokeToken"
)

// A call whose context has a token (ContextWithToken) sends that token
// and no other, on every attempt; one with an empty token sends none; one
// without sends the client's. Calls of one client with different tokens
// at once never mix them up.
func TestContextWithTokenIsPerCall(t *testing.T) {
	etcd := tst.StartEtcd(t)
	var f fault
	// The identity a test call asks for names the authorization it must
	// carry: "none" none, else "Bearer <identity>.secret". The check
	// answers GetIdentity itself.
	check := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		r, ok := req.(*taskdv1.GetIdentityRequest)
		if !ok {
			return h(ctx, req)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		want := []string{"Bearer " + r.GetIdentity() + ".secret"}
		if r.GetIdentity() == "none" {
			want = nil
		}
		if got := md.Get("authorization"); fmt.Sprint(got) != fmt.Sprint(want) {
			return nil, status.Errorf(codes.Unauthenticated, "authorization %q, want %q", got, want)
		}
		return &taskdv1.GetIdentityResponse{Identity: &taskdv1.Identity{Identity: r.GetIdentity()}}, nil
	}
	s := startNode(t, etcd.Client(t), "n1", grpc.ChainUnaryInterceptor(f.unary, check))
	c := dial(t, []string{s.addr}, client.WithToken("default.secret"), client.WithRetries(5, 10*time.Millisecond, 100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if _, err := c.Identity(ctx, "default"); err != nil {
		t.Fatalf("a call without a token of its own: %v", err)
	}
	if _, err := c.Identity(client.ContextWithToken(ctx, ""), "none"); err != nil {
		t.Fatalf("a call with an empty token: %v", err)
	}
	// A retry carries the token of its call.
	f.arm(getIdentityMethod, 1, false)
	before := f.calls.Load()
	if _, err := c.Identity(client.ContextWithToken(ctx, "retried.secret"), "retried"); err != nil || f.calls.Load()-before != 2 {
		t.Fatalf("a retried call with its token: %v after %d calls, want success after 2", err, f.calls.Load()-before)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("viewer%d", i%7)
			cctx := client.ContextWithToken(ctx, name+".secret")
			if i%7 == 6 {
				name, cctx = "none", client.ContextWithToken(ctx, "")
			}
			if _, err := c.Identity(cctx, name); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// tokenNode serves a TokenService over etcd, as taskd does, its calls
// checked by the tokens of a tokens file with root.root-secret, an admin
// token. The fault fails chosen calls after applying them.
func tokenNode(t *testing.T, f *fault) string {
	t.Helper()
	cli := tst.StartEtcd(t).Client(t)
	file, err := tokens.ParseFile(tokens.FileLine("root", "root-secret", []string{"admin", "read"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	fol := tokens.NewFollower(cli, "/client-tokens/")
	auth := tokens.NewAuthorizer(file, fol)
	ctx, cancel := context.WithCancel(context.Background())
	folDone := make(chan struct{})
	go func() { defer close(folDone); fol.Run(ctx) }()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(append(auth.ServerOptions(), grpc.ChainUnaryInterceptor(f.unary))...)
	taskdv1.RegisterTokenServiceServer(gs, tokens.NewServer(cli, "/client-tokens/", fol, auth.FileTokens))
	served := make(chan struct{})
	go func() { defer close(served); _ = gs.Serve(lis) }()
	t.Cleanup(func() {
		gs.Stop()
		<-served
		cancel()
		<-folDone
	})
	return lis.Addr().String()
}

// Tokens are created (their bearer returned once), listed and revoked. A
// CreateToken whose answer is lost is not retried (a retry would store a
// second token, or be refused by the first); a RevokeToken is, and
// succeeds.
func TestTokens(t *testing.T) {
	var f fault
	addr := tokenNode(t, &f)
	c := dial(t, []string{addr}, client.WithToken("root.root-secret"), client.WithRetries(5, 10*time.Millisecond, 100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tok, bearer, err := c.CreateToken(ctx, client.TokenSpec{ID: "ci", Verbs: []string{"read"}, Identities: []string{"tenant-7/*"}, Description: "CI job"})
	if err != nil || !strings.HasPrefix(bearer, "ci.") || tok.ID != "ci" || tok.Source != "etcd" || tok.CreatedBy != "root" {
		t.Fatalf("CreateToken: %v, bearer %q, %+v", err, bearer, tok)
	}
	if _, _, err := c.CreateToken(ctx, client.TokenSpec{ID: "ci", Verbs: []string{"read"}}); !errors.Is(err, client.ErrAlreadyExists) {
		t.Fatalf("a second CreateToken: %v, want ErrAlreadyExists", err)
	}
	f.arm(createTokenMethod, 1, false)
	before := f.calls.Load()
	if _, _, err := c.CreateToken(ctx, client.TokenSpec{Verbs: []string{"read"}}); !errors.Is(err, client.ErrUnavailable) || f.calls.Load()-before != 1 {
		t.Fatalf("CreateToken whose answer is lost: %v after %d calls, want UNAVAILABLE after 1", err, f.calls.Load()-before)
	}

	toks, err := c.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{}
	for _, tk := range toks {
		sources[tk.ID] = tk.Source
	}
	if len(toks) != 3 || sources["ci"] != "etcd" || sources["root"] != "file" {
		t.Fatalf("Tokens: %+v; want ci (etcd), root (file) and the one whose answer was lost", toks)
	}

	f.arm(revokeTokenMethod, 1, false)
	if err := c.RevokeToken(ctx, "ci"); err != nil {
		t.Fatalf("RevokeToken whose answer is lost: %v", err)
	}
	if err := c.RevokeToken(ctx, "ci"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("a first revoke of a revoked token: %v, want ErrNotFound", err)
	}
	if err := c.RevokeToken(ctx, "root"); !errors.Is(err, client.ErrFailedPrecondition) {
		t.Fatalf("revoke of a tokens file's token: %v, want ErrFailedPrecondition", err)
	}
}

package tokens_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	"github.com/taskd/taskd/pkg/tokens"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// tokenServer serves the TokenService over loopback gRPC behind the real
// interceptors of an authorizer over file and the tokens stored under
// prefix in e.
type tokenServer struct {
	auth   *tokens.Authorizer
	client taskdv1.TokenServiceClient
	conn   *grpc.ClientConn
}

func startTokenServer(t *testing.T, e *tst.Etcd, prefix, fileText string) *tokenServer {
	t.Helper()
	file, err := tokens.ParseFile(fileText)
	if err != nil {
		t.Fatal(err)
	}
	cli := e.Client(t)
	fol := tokens.NewFollower(cli, prefix)
	auth := tokens.NewAuthorizer(file, fol)
	runFollower(t, fol)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(auth.ServerOptions()...)
	taskdv1.RegisterTokenServiceServer(gs, tokens.NewServer(cli, prefix, fol, auth.FileTokens))
	taskdv1.RegisterWorkerServiceServer(gs, waitingWorkers{})
	served := make(chan struct{})
	go func() { defer close(served); _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(); gs.Stop(); <-served })
	return &tokenServer{auth: auth, client: taskdv1.NewTokenServiceClient(conn), conn: conn}
}

// as returns a context of the test carrying bearer.
func as(t *testing.T, bearer string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bearer)
}

// TestScopedAdminCannotEscalate: through the real interceptors, an admin
// token scoped to tenant-9/* cannot mint a token beyond its own verbs or
// scopes (the unscoped, every-verb token of the issue included), lists only
// the tokens within it, and cannot revoke one outside it (NOT_FOUND, as for
// an id that does not exist); an unscoped admin holding every verb can
// create anything.
func TestScopedAdminCannotEscalate(t *testing.T) {
	e := tst.StartEtcd(t)
	root := "root." + tokens.NewSecret()
	srv := startTokenServer(t, e, "/tok-scope/",
		tokens.FileLine("root", strings.TrimPrefix(root, "root."), tokens.Verbs, nil))
	create := func(bearer, id, verbs string, scopes ...string) (string, error) {
		resp, err := srv.client.CreateToken(as(t, bearer), &taskdv1.CreateTokenRequest{Id: id, Verbs: strings.Split(verbs, ","), Identities: scopes})
		return resp.GetBearer(), err
	}
	mustCreate := func(bearer, id, verbs string, scopes ...string) string {
		t.Helper()
		b, err := create(bearer, id, verbs, scopes...)
		if err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
		return b
	}
	t9 := mustCreate(root, "t9-admin", "admin,read,control", "tenant-9/*")
	mustCreate(root, "t9-ci", "read", "tenant-9/ci")
	mustCreate(root, "t7-ci", "read", "tenant-7/*")
	mustCreate(root, "everyone-reader", "read")
	mustCreate(root, "worker", "work")

	for _, tc := range []struct {
		name, verbs string
		scopes      []string
		want        string
	}{
		{"the issue's token: every verb, unscoped", "schedule,read,control,admin,work", nil, `verb "schedule"`},
		{"unscoped, own verbs", "read,control,admin", nil, "unscoped"},
		{"a verb it lacks", "read,schedule", []string{"tenant-9/*"}, `verb "schedule"`},
		{"a wider prefix", "read", []string{"tenant-*"}, `"tenant-*"`},
		{"another tenant", "read", []string{"tenant-7/*"}, `"tenant-7/*"`},
		{"one scope out of two", "read", []string{"tenant-9/a", "bob"}, `"bob"`},
	} {
		_, err := create(t9, "escalated", tc.verbs, tc.scopes...)
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), tc.want) {
			t.Errorf("%s: %v, want PermissionDenied naming %s", tc.name, err, tc.want)
		}
	}
	mustCreate(t9, "t9-team", "read,control", "tenant-9/team-1/*", "tenant-9/x")

	ids := func(bearer string) []string {
		t.Helper()
		resp, err := srv.client.ListTokens(as(t, bearer), &taskdv1.ListTokensRequest{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		var out []string
		for _, p := range resp.GetTokens() {
			out = append(out, p.GetId())
		}
		return out
	}
	if got := strings.Join(ids(t9), " "); got != "t9-admin t9-ci t9-team" {
		t.Fatalf("the scoped admin lists %q, want only the tokens within it", got)
	}
	if got := strings.Join(ids(root), " "); got != "everyone-reader root t7-ci t9-admin t9-ci t9-team worker" {
		t.Fatalf("root lists %q", got)
	}

	revoke := func(bearer, id string) error {
		_, err := srv.client.RevokeToken(as(t, bearer), &taskdv1.RevokeTokenRequest{Id: id})
		return err
	}
	for _, id := range []string{"t7-ci", "everyone-reader", "worker", "root", "nobody"} {
		err := revoke(t9, id)
		if status.Code(err) != codes.NotFound || status.Convert(err).Message() != `id: no token "`+id+`" is stored within the verbs and identities of token t9-admin` {
			t.Errorf("the scoped admin revokes %s: %v, want NotFound as for an unknown id", id, err)
		}
	}
	if !slices.Contains(ids(root), "t7-ci") {
		t.Fatal("a token outside the scoped admin was revoked")
	}
	if err := revoke(t9, "t9-ci"); err != nil {
		t.Fatalf("the scoped admin revokes a token within it: %v", err)
	}
	if err := revoke(root, "root"); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("root revokes the file's root: %v, want FailedPrecondition", err)
	}
	// A token with every verb, unscoped, makes any token.
	mustCreate(root, "anything", strings.Join(tokens.Verbs, ","))
}

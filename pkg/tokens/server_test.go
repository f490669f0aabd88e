package tokens_test

import (
	"context"
	"crypto/sha256"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	"github.com/taskd/taskd/pkg/tokens"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// runFollower runs f until the test ends.
func runFollower(t *testing.T, f *tokens.Follower) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// followedServer is a Server of the tokens at prefix over cli (no file
// tokens) with its follower, run until the test ends, and the context of
// the test's calls.
func followedServer(t *testing.T, cli *clientv3.Client, prefix string) (*tokens.Server, *tokens.Follower, context.Context) {
	fol := tokens.NewFollower(cli, prefix)
	srv := tokens.NewServer(cli, prefix, fol, nil)
	runFollower(t, fol)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return srv, fol, ctx
}

func bearerCtx(token string) context.Context {
	return metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", "Bearer "+token))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStoredTokens: a token created through the server is accepted by the
// creating node's authorizer when the call returns and by another node's
// once its follower sees it; only its hash is stored; a revoked one is
// refused by the revoking node when the call returns and by the other once
// its follower sees the deletion.
func TestStoredTokens(t *testing.T) {
	e := tst.StartEtcd(t)
	cliA, cliB := e.Client(t), e.Client(t)
	const prefix = "/tok-test/"
	rootSecret := tokens.NewSecret()
	file, err := tokens.ParseFile(tokens.FileLine("root", rootSecret, []string{"admin", "read"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	folA, folB := tokens.NewFollower(cliA, prefix), tokens.NewFollower(cliB, prefix)
	authA, authB := tokens.NewAuthorizer(file, folA), tokens.NewAuthorizer(nil, folB)
	srv := tokens.NewServer(cliA, prefix, folA, authA.FileTokens)

	// Before B's follower listed once, an unknown id is UNAVAILABLE (it may
	// be stored), not UNAUTHENTICATED.
	if _, err := authB.Authenticate(bearerCtx("someone.x")); status.Code(err) != codes.Unavailable {
		t.Fatalf("before the first list: %v, want Unavailable", err)
	}
	runFollower(t, folA)
	runFollower(t, folB)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		req  *taskdv1.CreateTokenRequest
		code codes.Code
		want string
	}{
		{"no verbs", &taskdv1.CreateTokenRequest{Id: "x"}, codes.InvalidArgument, "verbs"},
		{"unknown verb", &taskdv1.CreateTokenRequest{Id: "x", Verbs: []string{"fly"}}, codes.InvalidArgument, "verbs"},
		{"bad id", &taskdv1.CreateTokenRequest{Id: "a.b", Verbs: []string{"read"}}, codes.InvalidArgument, "id"},
		{"bad scope", &taskdv1.CreateTokenRequest{Id: "x", Verbs: []string{"read"}, Identities: []string{"a*b"}}, codes.InvalidArgument, "identities"},
		{"long description", &taskdv1.CreateTokenRequest{Id: "x", Verbs: []string{"read"}, Description: strings.Repeat("d", 300)}, codes.InvalidArgument, "description"},
		{"id of the file", &taskdv1.CreateTokenRequest{Id: "root", Verbs: []string{"read"}}, codes.AlreadyExists, "id"},
		// Limits (docs/limits.md).
		{"a million verbs", &taskdv1.CreateTokenRequest{Id: "x", Verbs: slices.Repeat([]string{"read"}, 1_000_000)}, codes.InvalidArgument, "verbs"},
		{"65 scopes", &taskdv1.CreateTokenRequest{Id: "x", Verbs: []string{"read"}, Identities: slices.Repeat([]string{"a"}, tokens.MaxScopes+1)}, codes.InvalidArgument, "identities"},
		{"scope of 258 bytes", &taskdv1.CreateTokenRequest{Id: "x", Verbs: []string{"read"}, Identities: []string{strings.Repeat("s", 257) + "*"}}, codes.InvalidArgument, "identities"},
		{"scope with a control character", &taskdv1.CreateTokenRequest{Id: "x", Verbs: []string{"read"}, Identities: []string{"a\x00*"}}, codes.InvalidArgument, "identities"},
		{"id of 1 MB", &taskdv1.CreateTokenRequest{Id: strings.Repeat("i", 1<<20), Verbs: []string{"read"}}, codes.InvalidArgument, "id"},
	} {
		_, err := srv.CreateToken(ctx, tc.req)
		if status.Code(err) != tc.code || !strings.HasPrefix(status.Convert(err).Message(), tc.want+":") || len(status.Convert(err).Message()) > 1024 {
			t.Errorf("%s: %v, want %v naming %s", tc.name, err, tc.code, tc.want)
		}
	}

	created, err := srv.CreateToken(ctx, &taskdv1.CreateTokenRequest{Id: "ci", Verbs: []string{"schedule", "read"},
		Identities: []string{"tenant-7/*"}, Description: "the CI job"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.CreateToken(ctx, &taskdv1.CreateTokenRequest{Id: "ci", Verbs: []string{"read"}}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("second create of ci: %v, want AlreadyExists", err)
	}
	bearer := created.GetBearer()
	id, secret, _ := strings.Cut(bearer, ".")
	if id != "ci" || len(secret) < 40 {
		t.Fatalf("bearer %q", bearer)
	}
	// Stored: the hash, never the secret.
	resp, err := cliA.Get(ctx, prefix+"token/ci")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("stored token: %v %v", resp, err)
	}
	sum := sha256.Sum256([]byte(secret))
	if strings.Contains(string(resp.Kvs[0].Value), secret) || !strings.Contains(string(resp.Kvs[0].Value), string(sum[:])) {
		t.Fatal("the stored record holds the secret, or not its hash")
	}

	// A accepts it at once (no waiting); B once its follower sees it.
	tok, err := authA.Authenticate(bearerCtx(bearer))
	if err != nil {
		t.Fatalf("creating node: %v", err)
	}
	if err := tokens.Authorize(tok, "/taskd.v1.TaskService/ScheduleTask",
		&taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{Identity: "tenant-7/a"}}); err != nil {
		t.Fatalf("in scope: %v", err)
	}
	err = tokens.Authorize(tok, "/taskd.v1.TaskService/ScheduleTask", &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{Identity: "bob"}})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `"bob"`) {
		t.Fatalf("out of scope: %v", err)
	}
	err = tokens.Authorize(tok, "/taskd.v1.TokenService/ListTokens", &taskdv1.ListTokensRequest{})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `"admin"`) {
		t.Fatalf("tokens without admin: %v", err)
	}
	waitFor(t, "node B to accept the new token", func() bool { _, err := authB.Authenticate(bearerCtx(bearer)); return err == nil })
	if _, err := authB.Authenticate(bearerCtx("ci.wrong")); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("wrong secret on B: %v", err)
	}

	list, err := srv.ListTokens(ctx, &taskdv1.ListTokensRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range list.GetTokens() {
		got = append(got, p.GetId()+"/"+p.GetSource().String())
	}
	if strings.Join(got, " ") != "ci/TOKEN_SOURCE_ETCD root/TOKEN_SOURCE_FILE" {
		t.Fatalf("listed %v", got)
	}
	if p := list.GetTokens()[0]; p.GetDescription() != "the CI job" || p.GetCreatedAt() == nil {
		t.Fatalf("listed %v", p)
	}

	for _, tc := range []struct {
		id   string
		code codes.Code
	}{{"root", codes.FailedPrecondition}, {"nobody", codes.NotFound}, {"a.b", codes.InvalidArgument}} {
		if _, err := srv.RevokeToken(ctx, &taskdv1.RevokeTokenRequest{Id: tc.id}); status.Code(err) != tc.code {
			t.Errorf("revoke %s: %v, want %v", tc.id, err, tc.code)
		}
	}
	if _, err := srv.RevokeToken(ctx, &taskdv1.RevokeTokenRequest{Id: "ci"}); err != nil {
		t.Fatal(err)
	}
	if _, err := authA.Authenticate(bearerCtx(bearer)); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("revoked token on the revoking node: %v, want Unauthenticated", err)
	}
	waitFor(t, "node B to refuse the revoked token", func() bool {
		_, err := authB.Authenticate(bearerCtx(bearer))
		return status.Code(err) == codes.Unauthenticated
	})
	if _, err := authA.Authenticate(bearerCtx("root." + rootSecret)); err != nil {
		t.Fatalf("file token: %v", err)
	}
}

// TestFollowerIgnoresARecordUnderAnotherKey: a record whose id is not the
// one of its key (written by hand) gives no token.
func TestFollowerIgnoresARecordUnderAnotherKey(t *testing.T) {
	e := tst.StartEtcd(t)
	cli := e.Client(t)
	const prefix = "/tok-relist/"
	srv, fol, ctx := followedServer(t, cli, prefix)
	if _, err := srv.CreateToken(ctx, &taskdv1.CreateTokenRequest{Id: "a", Verbs: []string{"read"}}); err != nil {
		t.Fatal(err)
	}
	rec, err := cli.Get(ctx, prefix+"token/a")
	if err != nil {
		t.Fatal(err)
	}
	put, err := cli.Put(ctx, prefix+"token/b", string(rec.Kvs[0].Value))
	if err != nil {
		t.Fatal(err)
	}
	if err := fol.WaitSeen(ctx, put.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if tok, _ := fol.Lookup("a"); tok == nil {
		t.Fatal("token a lost")
	}
	// Record b says its id is "a": a record under the wrong key is ignored.
	if tok, _ := fol.Lookup("b"); tok != nil {
		t.Fatal("a record under another id's key was taken")
	}
}

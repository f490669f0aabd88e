package tokens_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	"github.com/taskd/taskd/pkg/tokens"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestRevokedTokenIsToldSo: a stored token revoked through the server is
// refused on the revoking node and on another node with a message saying
// it was revoked; a file token whose line a reload removed is refused
// saying so. Only the holder of the very secret is told: the wrong secret
// of a revoked id, of a live id, and an unknown id all get the one generic
// message, so that nobody learns which ids exist.
func TestRevokedTokenIsToldSo(t *testing.T) {
	e := tst.StartEtcd(t)
	cliA, cliB := e.Client(t), e.Client(t)
	const prefix = "/tok-revoked/"
	rootSecret, opsSecret := tokens.NewSecret(), tokens.NewSecret()
	file, err := tokens.ParseFile(tokens.FileLine("root", rootSecret, []string{"admin", "read"}, nil) + "\n" +
		tokens.FileLine("ops", opsSecret, []string{"read"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	folA, folB := tokens.NewFollower(cliA, prefix), tokens.NewFollower(cliB, prefix)
	authA, authB := tokens.NewAuthorizer(file, folA), tokens.NewAuthorizer(nil, folB)
	srv := tokens.NewServer(cliA, prefix, folA, authA.FileTokens)
	runFollower(t, folA)
	runFollower(t, folB)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	created, err := srv.CreateToken(ctx, &taskdv1.CreateTokenRequest{Id: "ci", Verbs: []string{"read"}})
	if err != nil {
		t.Fatal(err)
	}
	ci := created.GetBearer()
	waitFor(t, "node B to accept the new token", func() bool { _, err := authB.Authenticate(bearerCtx(ci)); return err == nil })
	if _, err := srv.RevokeToken(ctx, &taskdv1.RevokeTokenRequest{Id: "ci"}); err != nil {
		t.Fatal(err)
	}
	refused := func(a *tokens.Authorizer, bearer string) string {
		_, err := a.Authenticate(bearerCtx(bearer))
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("%s: %v, want Unauthenticated", bearer, err)
		}
		return status.Convert(err).Message()
	}
	const generic = "invalid bearer token: unknown token id or wrong secret"
	if msg := refused(authA, ci); !strings.HasPrefix(msg, "invalid bearer token: token ci was revoked (at ") {
		t.Fatalf("revoked token on the revoking node: %q", msg)
	}
	waitFor(t, "node B to refuse the revoked token", func() bool {
		_, err := authB.Authenticate(bearerCtx(ci))
		return status.Code(err) == codes.Unauthenticated
	})
	if msg := refused(authB, ci); !strings.HasPrefix(msg, "invalid bearer token: token ci was revoked (at ") {
		t.Fatalf("revoked token on another node: %q", msg)
	}
	if strings.Contains(refused(authA, ci), strings.SplitN(ci, ".", 2)[1]) {
		t.Fatal("the message holds the secret")
	}

	// A reload that drops ops's line.
	authA.SetFile(map[string]*tokens.Token{"root": file["root"]})
	if msg := refused(authA, "ops."+opsSecret); !strings.HasPrefix(msg, "invalid bearer token: token ops was removed from this node's tokens file") {
		t.Fatalf("token removed from the file: %q", msg)
	}

	for _, bearer := range []string{"ci.wrong", "ops.wrong", "root.wrong", "nobody.x", "ci." + rootSecret} {
		if msg := refused(authA, bearer); msg != generic {
			t.Errorf("%s: %q, want %q", bearer, msg, generic)
		}
		if msg := refused(authB, bearer); msg != generic {
			t.Errorf("%s on node B: %q, want %q", bearer, msg, generic)
		}
	}

	// The line put back: ops works again.
	authA.SetFile(file)
	if _, err := authA.Authenticate(bearerCtx("ops." + opsSecret)); err != nil {
		t.Fatalf("ops put back: %v", err)
	}
}

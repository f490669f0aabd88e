package tokens_test

import (
	"testing"

	"github.com/taskd/taskd/internal/etcdfault"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestFollowerBrokenWatchListsAgain: a token created, and one revoked,
// whose event breaks the follower's watch (the fault swallows the event)
// are seen by the list that follows: the create and the revoke return
// (each waits for the follower to see its write) and the follower knows
// the one and not the other; the watch resumed after the list brings the
// next change.
func TestFollowerBrokenWatchListsAgain(t *testing.T) {
	e := tst.StartEtcd(t)
	cli := e.Client(t)
	faults := etcdfault.New()
	faults.Wrap(cli)
	const prefix = "/tok-broken/"
	srv, fol, ctx := followedServer(t, cli, prefix)
	create := func(id string) {
		t.Helper()
		if _, err := srv.CreateToken(ctx, &taskdv1.CreateTokenRequest{Id: id, Verbs: []string{"read"}}); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	create("a")

	brk := faults.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: prefix + "token/b", Times: 1, Action: etcdfault.BreakWatch()})
	create("b")
	if tok, _ := fol.Lookup("b"); tok == nil {
		t.Fatal("the token created across the break is not known")
	}
	if brk.Hits() != 1 {
		t.Fatalf("the watch was broken %d times; want once", brk.Hits())
	}

	brk = faults.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: prefix + "token/a", Times: 1, Action: etcdfault.BreakWatch()})
	if _, err := srv.RevokeToken(ctx, &taskdv1.RevokeTokenRequest{Id: "a"}); err != nil {
		t.Fatalf("revoke a: %v", err)
	}
	if tok, _ := fol.Lookup("a"); tok != nil {
		t.Fatal("the token revoked across the break is still known")
	}
	if brk.Hits() != 1 {
		t.Fatalf("the watch was broken %d times; want once", brk.Hits())
	}

	create("c")
	if tok, _ := fol.Lookup("c"); tok == nil {
		t.Fatal("the token created after the new list is not known")
	}
	if tok, _ := fol.Lookup("b"); tok == nil {
		t.Fatal("token b lost")
	}
}

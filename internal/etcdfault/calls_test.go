package etcdfault_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdfault"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// clients starts an etcd and returns a client wrapped by a new Injector and
// a plain client to look at what etcd really holds.
func clients(t *testing.T) (*etcdfault.Injector, *clientv3.Client, *clientv3.Client) {
	t.Helper()
	e := tst.StartEtcd(t)
	in := etcdfault.New()
	wrapped := e.Client(t)
	in.Wrap(wrapped)
	return in, wrapped, e.Client(t)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// written reports whether key holds a value in etcd.
func written(t *testing.T, plain *clientv3.Client, key string) bool {
	t.Helper()
	resp, err := plain.Get(ctxFor(t, 5*time.Second), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return len(resp.Kvs) > 0
}

// appliedDespiteDeadline checks that a call (what) failed with an error
// that wraps DeadlineExceeded, and was applied nonetheless: key is
// written.
func appliedDespiteDeadline(t *testing.T, plain *clientv3.Client, key string, err error, what string) {
	t.Helper()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: error %v, want one that wraps DeadlineExceeded", what, err)
	}
	if !written(t, plain, key) {
		t.Fatalf("%s was not applied", what)
	}
}

func TestFailDoesNotReachEtcd(t *testing.T) {
	in, cli, plain := clients(t)
	in.Add(etcdfault.Rule{Op: etcdfault.OpPut, Prefix: "a/", Action: etcdfault.Fail(nil)})
	_, err := cli.Put(ctxFor(t, 5*time.Second), "a/1", "v")
	if !errors.Is(err, etcdfault.ErrInjected) {
		t.Fatalf("put error = %v, want the injected failure", err)
	}
	if written(t, plain, "a/1") {
		t.Fatal("a failed put was written")
	}
	// A put outside the prefix passes.
	if _, err := cli.Put(ctxFor(t, 5*time.Second), "b/1", "v"); err != nil {
		t.Fatalf("put outside the rule's prefix: %v", err)
	}
	if !written(t, plain, "b/1") {
		t.Fatal("an unharmed put was not written")
	}

	mine := errors.New("mine")
	in.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Action: etcdfault.Fail(mine)})
	_, err = cli.Txn(ctxFor(t, 5*time.Second)).Then(clientv3.OpPut("c/1", "v")).Commit()
	if !errors.Is(err, mine) {
		t.Fatalf("txn error = %v, want the rule's error", err)
	}
	if written(t, plain, "c/1") {
		t.Fatal("a failed txn was written")
	}
}

func TestAmbiguousAppliesTheCall(t *testing.T) {
	in, cli, plain := clients(t)
	in.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Action: etcdfault.Ambiguous(nil)})
	_, err := cli.Txn(ctxFor(t, 5*time.Second)).
		If(clientv3.Compare(clientv3.CreateRevision("k"), "=", 0)).
		Then(clientv3.OpPut("k", "v")).Commit()
	appliedDespiteDeadline(t, plain, "k", err, "an ambiguous txn")
}

func TestDelayAfterAppliesDespiteTheCallersDeadline(t *testing.T) {
	in, cli, plain := clients(t)
	in.Add(etcdfault.Rule{Op: etcdfault.OpPut, Action: etcdfault.DelayAfter(time.Hour)})
	_, err := cli.Put(ctxFor(t, 100*time.Millisecond), "k", "v")
	appliedDespiteDeadline(t, plain, "k", err, "a put delayed after sending")
}

func TestDelayAfterReturnsTheReply(t *testing.T) {
	in, cli, _ := clients(t)
	in.Add(etcdfault.Rule{Op: etcdfault.OpPut, Action: etcdfault.DelayAfter(20 * time.Millisecond)})
	resp, err := cli.Put(ctxFor(t, 5*time.Second), "k", "v")
	if err != nil || resp.Header.Revision == 0 {
		t.Fatalf("put = %v, %v; want its reply", resp, err)
	}
}

func TestDelayBeforeWithAShortDeadlineSendsNothing(t *testing.T) {
	in, cli, plain := clients(t)
	in.Add(etcdfault.Rule{Op: etcdfault.OpDelete, Action: etcdfault.DelayBefore(time.Hour)})
	in.Add(etcdfault.Rule{Op: etcdfault.OpPut, Action: etcdfault.DelayBefore(time.Hour)})
	_, err := cli.Put(ctxFor(t, 100*time.Millisecond), "k", "v")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("put error = %v, want DeadlineExceeded", err)
	}
	if written(t, plain, "k") {
		t.Fatal("a put whose caller gave up during the delay was sent")
	}
}

func TestDelayBeforeThenSends(t *testing.T) {
	in, cli, plain := clients(t)
	in.Add(etcdfault.Rule{Op: etcdfault.OpPut, Action: etcdfault.DelayBefore(20 * time.Millisecond)})
	if _, err := cli.Put(ctxFor(t, 5*time.Second), "k", "v"); err != nil {
		t.Fatalf("put: %v", err)
	}
	if !written(t, plain, "k") {
		t.Fatal("a delayed put was not applied")
	}
}

func TestBlockReturnsWhenTheCallerGivesUp(t *testing.T) {
	in, cli, plain := clients(t)
	in.Add(etcdfault.Rule{Op: etcdfault.OpPut, Action: etcdfault.Block()})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cli.Put(ctx, "k", "v")
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("put error = %v, want Canceled", err)
	}
	if written(t, plain, "k") {
		t.Fatal("a blocked put was sent")
	}
}

func TestAfterAndTimesCountMatchingCalls(t *testing.T) {
	in, cli, plain := clients(t)
	h := in.Add(etcdfault.Rule{Op: etcdfault.OpPut, Prefix: "n/", After: 2, Times: 2, Action: etcdfault.Fail(nil)})
	// Calls the rule does not match are not counted.
	if _, err := cli.Put(ctxFor(t, 5*time.Second), "other", "v"); err != nil {
		t.Fatalf("put other: %v", err)
	}
	want := []bool{true, true, false, false, true, true}
	for i, ok := range want {
		key := "n/" + string(rune('a'+i))
		_, err := cli.Put(ctxFor(t, 5*time.Second), key, "v")
		if (err == nil) != ok {
			t.Fatalf("put %d: err = %v, want success %v", i+1, err, ok)
		}
		if written(t, plain, key) != ok {
			t.Fatalf("put %d: written = %v, want %v", i+1, !ok, ok)
		}
	}
	if h.Seen() != 6 || h.Hits() != 2 {
		t.Fatalf("seen %d hits %d, want 6 and 2", h.Seen(), h.Hits())
	}

	every := in.Add(etcdfault.Rule{Op: etcdfault.OpPut, Prefix: "e/", Action: etcdfault.Fail(nil)})
	for i := range 3 {
		if _, err := cli.Put(ctxFor(t, 5*time.Second), "e/k", "v"); err == nil {
			t.Fatalf("put %d under a rule with Times 0 passed", i+1)
		}
	}
	every.Remove()
	if _, err := cli.Put(ctxFor(t, 5*time.Second), "e/k", "v"); err != nil {
		t.Fatalf("put after the rule was removed: %v", err)
	}
	if every.Hits() != 3 {
		t.Fatalf("hits = %d, want 3", every.Hits())
	}
}

func TestFirstHarmingRuleDecides(t *testing.T) {
	in, cli, _ := clients(t)
	first := errors.New("first")
	a := in.Add(etcdfault.Rule{Op: etcdfault.OpPut, Times: 1, Action: etcdfault.Fail(first)})
	b := in.Add(etcdfault.Rule{Op: etcdfault.OpAny, Action: etcdfault.Fail(nil)})
	if _, err := cli.Put(ctxFor(t, 5*time.Second), "k", "v"); !errors.Is(err, first) {
		t.Fatalf("put error = %v, want the first rule's", err)
	}
	if _, err := cli.Put(ctxFor(t, 5*time.Second), "k", "v"); !errors.Is(err, etcdfault.ErrInjected) {
		t.Fatalf("second put error = %v, want the second rule's", err)
	}
	if a.Seen() != 2 || a.Hits() != 1 || b.Seen() != 2 || b.Hits() != 1 {
		t.Fatalf("a seen %d hits %d, b seen %d hits %d; want 2 1 2 1", a.Seen(), a.Hits(), b.Seen(), b.Hits())
	}
}

func TestPrefixMatchesTxnComparesAndOps(t *testing.T) {
	in, cli, plain := clients(t)
	var calls []etcdfault.Call
	h := in.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Prefix: "guard/",
		Match:  func(c etcdfault.Call) bool { calls = append(calls, c); return true },
		Action: etcdfault.Fail(nil)})
	txn := func(cmpKey string, then, els []clientv3.Op) error {
		_, err := cli.Txn(ctxFor(t, 5*time.Second)).
			If(clientv3.Compare(clientv3.Version(cmpKey), ">", -1)).Then(then...).Else(els...).Commit()
		return err
	}
	if err := txn("guard/c", []clientv3.Op{clientv3.OpPut("x/1", "v")}, nil); err == nil {
		t.Fatal("a txn comparing a key under the prefix passed")
	}
	if err := txn("x/c", []clientv3.Op{clientv3.OpPut("guard/t", "v")}, nil); err == nil {
		t.Fatal("a txn writing a key under the prefix passed")
	}
	if err := txn("x/c", []clientv3.Op{clientv3.OpPut("x/2", "v")}, []clientv3.Op{clientv3.OpGet("guard/e")}); err == nil {
		t.Fatal("a txn reading a key under the prefix in Else passed")
	}
	if err := txn("x/c", []clientv3.Op{clientv3.OpPut("x/3", "v")}, nil); err != nil {
		t.Fatalf("a txn without a key under the prefix: %v", err)
	}
	if written(t, plain, "x/1") || written(t, plain, "x/2") || !written(t, plain, "x/3") {
		t.Fatal("etcd does not hold exactly the unharmed txn's write")
	}
	if h.Hits() != 3 || len(calls) != 3 {
		t.Fatalf("hits %d, predicate saw %d calls; want 3 and 3", h.Hits(), len(calls))
	}
	want := []string{"x/c", "x/2", "guard/e"}
	if got := calls[2].Keys; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("txn keys = %q, want %q", got, want)
	}
}

// TestPrefixMatchesKeysOfNestedTxns: a Txn of nested Txns (the node's
// batches) is matched by the keys inside them, in order.
func TestPrefixMatchesKeysOfNestedTxns(t *testing.T) {
	in, cli, plain := clients(t)
	var calls []etcdfault.Call
	in.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Prefix: "guard/",
		Match:  func(c etcdfault.Call) bool { calls = append(calls, c); return true },
		Action: etcdfault.Fail(nil)})
	nested := clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.Version("n/c"), ">", -1)},
		[]clientv3.Op{clientv3.OpPut("guard/inner", "v")}, []clientv3.Op{clientv3.OpGet("n/e")})
	_, err := cli.Txn(ctxFor(t, 5*time.Second)).Then(clientv3.OpPut("x/outer", "v"), nested).Commit()
	if !errors.Is(err, etcdfault.ErrInjected) {
		t.Fatalf("a txn whose nested txn writes a key under the prefix: %v, want the injected failure", err)
	}
	if written(t, plain, "x/outer") || written(t, plain, "guard/inner") {
		t.Fatal("the failed txn was applied")
	}
	want := []string{"x/outer", "n/c", "guard/inner", "n/e"}
	if len(calls) != 1 || strings.Join(calls[0].Keys, " ") != strings.Join(want, " ") {
		t.Fatalf("calls %v, want one with keys %q", calls, want)
	}
}

func TestDoIsJudgedLikeItsOp(t *testing.T) {
	in, cli, plain := clients(t)
	in.Add(etcdfault.Rule{Op: etcdfault.OpPut, Action: etcdfault.Fail(nil)})
	if _, err := cli.Do(ctxFor(t, 5*time.Second), clientv3.OpPut("k", "v")); !errors.Is(err, etcdfault.ErrInjected) {
		t.Fatalf("Do(put) error = %v, want the injected failure", err)
	}
	if _, err := cli.Do(ctxFor(t, 5*time.Second), clientv3.OpGet("k")); err != nil {
		t.Fatalf("Do(get): %v", err)
	}
	if written(t, plain, "k") {
		t.Fatal("a failed Do(put) was written")
	}
}

func TestLeaseCalls(t *testing.T) {
	in, cli, _ := clients(t)
	in.Add(etcdfault.Rule{Op: etcdfault.OpGrant, Times: 1, Action: etcdfault.Fail(nil)})
	in.Add(etcdfault.Rule{Op: etcdfault.OpKeepAliveOnce, Times: 1, Action: etcdfault.Fail(nil)})
	// A prefix never matches a lease call: lease calls touch no key.
	in.Add(etcdfault.Rule{Op: etcdfault.OpRevoke, Prefix: "x", Action: etcdfault.Fail(nil)})
	if _, err := cli.Grant(ctxFor(t, 5*time.Second), 10); !errors.Is(err, etcdfault.ErrInjected) {
		t.Fatalf("grant error = %v, want the injected failure", err)
	}
	g, err := cli.Grant(ctxFor(t, 5*time.Second), 10)
	if err != nil {
		t.Fatalf("second grant: %v", err)
	}
	if _, err := cli.KeepAliveOnce(ctxFor(t, 5*time.Second), g.ID); !errors.Is(err, etcdfault.ErrInjected) {
		t.Fatalf("keepalive error = %v, want the injected failure", err)
	}
	if _, err := cli.KeepAliveOnce(ctxFor(t, 5*time.Second), g.ID); err != nil {
		t.Fatalf("second keepalive: %v", err)
	}
	if _, err := cli.Revoke(ctxFor(t, 5*time.Second), g.ID); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	ttl, err := cli.TimeToLive(ctxFor(t, 5*time.Second), g.ID)
	if err != nil || ttl.TTL != -1 {
		t.Fatalf("time to live after revoke = %v, %v; want -1", ttl, err)
	}
}

func TestAddRefusesAnActionThatDoesNotFitTheOp(t *testing.T) {
	for _, r := range []etcdfault.Rule{
		{Op: etcdfault.OpPut, Action: etcdfault.DropEvents()},
		{Op: etcdfault.OpWatch, Action: etcdfault.Fail(nil)},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Add(%v, kind %d) did not panic", r.Op, r.Action.Kind)
				}
			}()
			etcdfault.New().Add(r)
		}()
	}
}

func TestDelayUntilHoldsTheCallUntilReleased(t *testing.T) {
	in, cli, plain := clients(t)
	release := make(chan struct{})
	h := in.Add(etcdfault.Rule{Op: etcdfault.OpPut, Times: 2, Action: etcdfault.DelayUntil(release)})
	errc := make(chan error, 1)
	go func() {
		_, err := cli.Put(ctxFor(t, 10*time.Second), "held", "v")
		errc <- err
	}()
	tst.Eventually(t, 10*time.Second, func() bool { return h.Hits() == 1 }, "the put to be held")
	if written(t, plain, "held") {
		t.Fatal("a held put was sent before its release")
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatalf("released put: %v", err)
	}
	if !written(t, plain, "held") {
		t.Fatal("a released put was not applied")
	}

	// A caller that gives up first gets its context's error, and nothing is sent.
	in.Add(etcdfault.Rule{Op: etcdfault.OpDelete, Action: etcdfault.DelayUntil(make(chan struct{}))})
	if _, err := cli.Delete(ctxFor(t, 100*time.Millisecond), "held"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delete error = %v, want DeadlineExceeded", err)
	}
	if !written(t, plain, "held") {
		t.Fatal("a delete whose caller gave up while it was held was sent")
	}
}

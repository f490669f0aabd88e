package taskservice

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/pkg/etcdembed"
)

// faultyEtcd starts an embedded etcd and returns a client wrapped by a new
// fault injector, and a plain client to see what etcd holds.
func faultyEtcd(t *testing.T) (*etcdfault.Injector, *clientv3.Client, *clientv3.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: filepath.Join(t.TempDir(), "etcd"), ClientURL: "http://127.0.0.1:0", Fast: true})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(srv.Close)
	dial := func() *clientv3.Client {
		cli, err := DialEtcd([]string{srv.ClientURL()})
		if err != nil {
			t.Fatalf("etcd client: %v", err)
		}
		t.Cleanup(func() { _ = cli.Close() })
		return cli
	}
	in := etcdfault.New()
	cli := dial()
	in.Wrap(cli)
	return in, cli, dial()
}

func holds(t *testing.T, cli *clientv3.Client, key string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return len(resp.Kvs) > 0
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (b *batcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// createItem is a write of key guarded by the key not existing yet.
func createItem(key string) ([]clientv3.Cmp, []clientv3.Op) {
	return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}, []clientv3.Op{clientv3.OpPut(key, "v")}
}

// Items batched together succeed or fail each on its own compares, in one
// Txn: the others are written, the failing one gets its Else responses, and
// nothing is sent again.
func TestBatcherGivesEachItemItsOwnOutcome(t *testing.T) {
	in, cli, plain := faultyEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := plain.Put(ctx, "guard", "taken"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var txns []etcdfault.Call
	in.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Match: func(c etcdfault.Call) bool {
		mu.Lock()
		txns = append(txns, c)
		mu.Unlock()
		return false
	}})
	release := make(chan struct{})
	first := in.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Times: 1, Action: etcdfault.DelayUntil(release)})

	b := newBatcher(cli, 10*time.Second, 128, DefaultMaxRequestBytes, 1)
	defer b.wait()
	outs := make([]txnOutcome, 4)
	var wg sync.WaitGroup
	start := func(i int, cmps []clientv3.Cmp, ops, els []clientv3.Op) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = b.do(ctx, cmps, ops, els)
		}()
	}
	cmps, ops := createItem("k0")
	start(0, cmps, ops, nil)
	waitFor(t, func() bool { return first.Hits() == 1 }, "the first item's Txn to be held")
	// While the only Txn allowed is held, the next three items queue up.
	cmps, ops = createItem("k1")
	start(1, cmps, ops, nil)
	start(2, []clientv3.Cmp{clientv3.Compare(clientv3.Value("guard"), "=", "free")},
		[]clientv3.Op{clientv3.OpPut("k2", "v")}, []clientv3.Op{clientv3.OpGet("guard")})
	cmps, ops = createItem("k3")
	start(3, cmps, ops, nil)
	waitFor(t, func() bool { return b.queued() == 3 }, "three items to queue")
	close(release)
	wg.Wait()

	for _, i := range []int{0, 1, 3} {
		if !outs[i].ok || outs[i].err != nil {
			t.Errorf("item %d: ok %v err %v, want ok", i, outs[i].ok, outs[i].err)
		}
	}
	if outs[2].ok || outs[2].err != nil {
		t.Fatalf("item 2: ok %v err %v, want a failed compare", outs[2].ok, outs[2].err)
	}
	if len(outs[2].els) != 1 || len(outs[2].els[0].GetResponseRange().Kvs) != 1 ||
		string(outs[2].els[0].GetResponseRange().Kvs[0].Value) != "taken" {
		t.Fatalf("item 2's Else responses = %v, want the range of guard", outs[2].els)
	}
	for key, want := range map[string]bool{"k0": true, "k1": true, "k2": false, "k3": true} {
		if holds(t, plain, key) != want {
			t.Errorf("etcd holds %s: %v, want %v", key, !want, want)
		}
	}
	// Txns: the first item alone, then the batch of three (their compares
	// and writes, and item 2's Else read), and nothing more.
	mu.Lock()
	defer mu.Unlock()
	if len(txns) != 2 || len(txns[1].Keys) != 7 {
		t.Fatalf("txns %v, want 2 with the second carrying all three queued items", txns)
	}
	if outs[1].size != 3 || outs[2].size != 3 || outs[3].size != 3 || outs[1].rev != outs[2].rev || outs[2].rev != outs[3].rev {
		t.Fatalf("outcomes %+v, want the three queued items in one Txn at one revision", outs[1:])
	}
}

// An item whose caller gives up while it waits in the queue is reported as
// an error to that caller, and is never sent: the error is a definite "not
// written", not an outcome the caller cannot know.
func TestBatcherReportsAnItemWhoseCallerGaveUp(t *testing.T) {
	in, cli, plain := faultyEtcd(t)
	release := make(chan struct{})
	first := in.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Times: 1, Action: etcdfault.DelayUntil(release)})
	b := newBatcher(cli, 10*time.Second, 128, DefaultMaxRequestBytes, 1)
	defer b.wait()

	done := make(chan txnOutcome, 1)
	go func() {
		cmps, ops := createItem("k0")
		done <- b.do(context.Background(), cmps, ops, nil)
	}()
	waitFor(t, func() bool { return first.Hits() == 1 }, "the first item's Txn to be held")

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan txnOutcome, 1)
	go func() {
		cmps, ops := createItem("k1")
		gaveUp <- b.do(ctx, cmps, ops, nil)
	}()
	waitFor(t, func() bool { return b.queued() == 1 }, "the second item to queue")
	cancel()
	out := <-gaveUp
	if out.ok || !errors.Is(out.err, context.Canceled) || !out.notSent {
		t.Fatalf("item whose caller gave up: ok %v err %v notSent %v, want context.Canceled, not sent", out.ok, out.err, out.notSent)
	}
	close(release)
	if out := <-done; !out.ok {
		t.Fatalf("first item: ok %v err %v", out.ok, out.err)
	}
	b.wait()
	if holds(t, plain, "k1") {
		t.Fatal("the abandoned item was written after its caller was told it failed")
	}
}

package writepath

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/pkg/etcdembed"
)

// faultyEtcd starts an embedded etcd and returns a client wrapped by a new
// fault injector, and a plain client to see what etcd holds.
func faultyEtcd(t *testing.T) (*etcdfault.Injector, *clientv3.Client, *clientv3.Client) {
	return testEtcd(t, 0)
}

// testEtcd starts an embedded etcd with --max-request-bytes maxRequest (0:
// etcd's default) and returns a client with the extra dial options,
// wrapped by a new fault injector, and a plain client.
func testEtcd(t *testing.T, maxRequest uint, extra ...grpc.DialOption) (*etcdfault.Injector, *clientv3.Client, *clientv3.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: filepath.Join(t.TempDir(), "etcd"), ClientURL: "http://127.0.0.1:0",
		Fast: true, MaxRequestBytes: maxRequest})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(srv.Close)
	dial := func(extra ...grpc.DialOption) *clientv3.Client {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.ClientURL()}, DialTimeout: 5 * time.Second,
			Logger: zap.NewNop(), DialOptions: extra})
		if err != nil {
			t.Fatalf("etcd client: %v", err)
		}
		t.Cleanup(func() { _ = cli.Close() })
		return cli
	}
	in := etcdfault.New()
	cli := dial(extra...)
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

func (b *Batcher) queued() int {
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

	b := NewBatcher(cli, 10*time.Second, 128, DefaultMaxRequestBytes, 1)
	defer b.Wait()
	outs := make([]Outcome, 4)
	var wg sync.WaitGroup
	start := func(i int, cmps []clientv3.Cmp, ops, els []clientv3.Op) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = b.Do(ctx, Txn{If: cmps, Then: ops, Else: els})
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
		if !outs[i].OK || outs[i].Err != nil {
			t.Errorf("item %d: ok %v err %v, want ok", i, outs[i].OK, outs[i].Err)
		}
	}
	if outs[2].OK || outs[2].Err != nil {
		t.Fatalf("item 2: ok %v err %v, want a failed compare", outs[2].OK, outs[2].Err)
	}
	if len(outs[2].Else) != 1 || len(outs[2].Else[0].GetResponseRange().Kvs) != 1 ||
		string(outs[2].Else[0].GetResponseRange().Kvs[0].Value) != "taken" {
		t.Fatalf("item 2's Else responses = %v, want the range of guard", outs[2].Else)
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
	if outs[1].Size != 3 || outs[2].Size != 3 || outs[3].Size != 3 || outs[1].Rev != outs[2].Rev || outs[2].Rev != outs[3].Rev {
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
	b := NewBatcher(cli, 10*time.Second, 128, DefaultMaxRequestBytes, 1)
	defer b.Wait()

	done := make(chan Outcome, 1)
	go func() {
		cmps, ops := createItem("k0")
		done <- b.Do(context.Background(), Txn{If: cmps, Then: ops})
	}()
	waitFor(t, func() bool { return first.Hits() == 1 }, "the first item's Txn to be held")

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan Outcome, 1)
	go func() {
		cmps, ops := createItem("k1")
		gaveUp <- b.Do(ctx, Txn{If: cmps, Then: ops})
	}()
	waitFor(t, func() bool { return b.queued() == 1 }, "the second item to queue")
	cancel()
	out := <-gaveUp
	if out.OK || !errors.Is(out.Err, context.Canceled) || !out.NotSent {
		t.Fatalf("item whose caller gave up: ok %v err %v notSent %v, want context.Canceled, not sent", out.OK, out.Err, out.NotSent)
	}
	close(release)
	if out := <-done; !out.OK {
		t.Fatalf("first item: ok %v err %v", out.OK, out.Err)
	}
	b.Wait()
	if holds(t, plain, "k1") {
		t.Fatal("the abandoned item was written after its caller was told it failed")
	}
}

// BenchmarkCommitBatching compares fenced writes of the shape of a run's
// commit (two compares, two puts), 64 at a time against a real embedded
// etcd: each in its own Txn, and through the Batcher.
func BenchmarkCommitBatching(b *testing.B) {
	ctx := context.Background()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: filepath.Join(b.TempDir(), "etcd"), ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.ClientURL()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	value := string(make([]byte, 256))
	write := func(i int) ([]clientv3.Cmp, []clientv3.Op) {
		a, c := fmt.Sprintf("/b/a/%09d", i), fmt.Sprintf("/b/c/%09d", i)
		return []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(a), "=", 0), clientv3.Compare(clientv3.ModRevision(c), "=", 0)},
			[]clientv3.Op{clientv3.OpPut(a, value), clientv3.OpPut(c, value)}
	}
	var next sync.Mutex
	i := 0 // across every call of every sub-benchmark: keys are never reused
	run := func(b *testing.B, one func(i int) error) {
		b.ResetTimer()
		b.SetParallelism(32) // 64 goroutines on 2 CPUs
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				next.Lock()
				i++
				k := i
				next.Unlock()
				if err := one(k); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("alone", func(b *testing.B) {
		base := 1 << 30
		run(b, func(i int) error {
			cmps, ops := write(base + i)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			resp, err := cli.Txn(cctx).If(cmps...).Then(ops...).Commit()
			if err == nil && !resp.Succeeded {
				return fmt.Errorf("write %d failed its compares", i)
			}
			return err
		})
	})
	b.Run("batched", func(b *testing.B) {
		bt := NewBatcher(cli, 10*time.Second, etcdembed.MaxTxnOps, DefaultMaxRequestBytes, 2)
		defer bt.Wait()
		base := 2 << 30
		run(b, func(i int) error {
			cmps, ops := write(base + i)
			out := bt.Do(ctx, Txn{If: cmps, Then: ops})
			if out.Err == nil && !out.OK {
				return fmt.Errorf("write %d failed its compares", i)
			}
			return out.Err
		})
	})
}

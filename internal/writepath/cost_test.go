package writepath

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/internal/etcdstatus"
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/pkg/etcdembed"
)

// wireSizes records the encoded size of every Txn request a client sends,
// as gRPC sends it.
type wireSizes struct {
	mu    sync.Mutex
	sizes []int
}

func (w *wireSizes) interceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if r, ok := req.(*etcdserverpb.TxnRequest); ok && method == "/etcdserverpb.KV/Txn" {
		w.mu.Lock()
		w.sizes = append(w.sizes, proto.Size(r))
		w.mu.Unlock()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (w *wireSizes) all() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int(nil), w.sizes...)
}

// sizedEtcd starts an embedded etcd with --max-request-bytes maxRequest (0:
// the default) and returns a fault injector over a client whose Txn sizes
// are recorded.
func sizedEtcd(t *testing.T, maxRequest uint) (*etcdfault.Injector, *clientv3.Client, *wireSizes) {
	w := &wireSizes{}
	in, cli, _ := testEtcd(t, maxRequest, grpc.WithChainUnaryInterceptor(w.interceptor))
	return in, cli, w
}

// startShaped is a write shaped like a run's start for identity id: five
// compares (epoch, task, registration, the two pauses), the task's put, and
// five Else reads, every key carrying the escaped identity.
func startShaped(id string, value int) Txn {
	enc := keyspace.Encode(id)
	keys := []string{"/taskd/map/" + enc, "/taskd/task/" + enc + "/01JTASKIDTASKIDTASKIDTASKI", "/taskd/nodes/n1",
		"/taskd/pause/identity/" + enc, "/taskd/pause/kind/rec"}
	var cmps []clientv3.Cmp
	var els []clientv3.Op
	for _, k := range keys {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
		els = append(els, clientv3.OpGet(k))
	}
	return Txn{If: cmps, Then: []clientv3.Op{clientv3.OpPut(keys[1], strings.Repeat("v", value))}, Else: els}
}

// longCJK is the i-th of many identities of 84 CJK characters (255 bytes,
// 765 once escaped in a key).
func longCJK(i int) string { return strings.Repeat("漢", 84) + fmt.Sprintf("%03d", i) }

// holdFirstTxn holds the first Txn of in until the returned release is
// called, so that the items after it queue up.
func holdFirstTxn(t *testing.T, in *etcdfault.Injector) (held func() bool, release func()) {
	ch := make(chan struct{})
	h := in.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Times: 1, Action: etcdfault.DelayUntil(ch)})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	return func() bool { return h.Hits() == 1 }, release
}

// 205 start-shaped items of long CJK identities, queued together: the
// Batcher sizes each as etcd does (compares and Else reads included), so
// they go out in several Txns that etcd takes, and each succeeds. The
// Batcher of the last release counted only put keys and values: it sent the
// 204 queued items as one Txn, which etcd refused ("request is too large"),
// and all 204 failed together although each alone succeeded.
func TestBatcherSizesItemsAsEtcdDoes(t *testing.T) {
	in, cli, wire := sizedEtcd(t, 0)
	b := NewBatcher(cli, 10*time.Second, etcdembed.MaxTxnOps, DefaultMaxRequestBytes, 1)
	defer b.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const items = 205
	nested, oldCount := 0, 0
	for i := 1; i < items; i++ {
		w := startShaped(longCJK(i), 3000)
		nested += w.Cost().nested
		oldCount += len(w.Then[0].KeyBytes()) + len(w.Then[0].ValueBytes())
	}
	// What makes the case: together the queued items are too large for one
	// request, but the old count (put keys and values) put them in one.
	if nested <= DefaultMaxRequestBytes || oldCount > 1<<20 {
		t.Fatalf("queued items weigh %d bytes (old count %d): want more than one request, and under the old 1 MiB count", nested, oldCount)
	}

	held, release := holdFirstTxn(t, in)
	outs := make([]Outcome, items)
	var wg sync.WaitGroup
	do := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = b.Do(ctx, startShaped(longCJK(i), 3000))
		}()
	}
	do(0)
	waitFor(t, held, "the first item's Txn to be held")
	for i := 1; i < items; i++ {
		do(i)
	}
	waitFor(t, func() bool { return b.queued() == items-1 }, "the items to queue")
	release()
	wg.Wait()

	failed := 0
	for i, out := range outs {
		if !out.OK {
			failed++
			if failed < 3 {
				t.Errorf("item %d: ok %v err %v", i, out.OK, out.Err)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d items failed, want none", failed, items)
	}
	sizes := wire.all()
	budget := RequestBudget(DefaultMaxRequestBytes)
	sum := 0
	for _, s := range sizes[1:] {
		sum += s
		if s > budget {
			t.Errorf("a Txn of %d bytes was sent, over the budget of %d", s, budget)
		}
	}
	if len(sizes) < 3 {
		t.Fatalf("%d Txns sent (%v), want the first alone and the rest in at least two", len(sizes), sizes)
	}
	// The sizing is exact: what the Batcher counted is what went on the wire.
	if c0 := startShaped(longCJK(0), 3000).Cost(); sizes[0] != c0.alone {
		t.Errorf("the lone item's Txn was %d bytes on the wire, the Batcher counted %d", sizes[0], c0.alone)
	}
	if sum != nested {
		t.Errorf("the batched Txns were %d bytes on the wire, the Batcher counted %d", sum, nested)
	}
	t.Logf("%d items of %d bytes on the wire in %d Txns: %v", items, sum+sizes[0], len(sizes), sizes)
}

// An item too large for any batch fails alone, at once, with ErrTooLarge,
// and is never sent; its neighbours in the queue succeed. And when etcd
// takes less than the Batcher was told (a server whose --max-request-bytes
// is lower than the node's setting), a batch it refuses is split: every
// item that fits is written, and the one item etcd refuses alone fails
// alone with ErrTooLarge, not sent again.
func TestBatcherItemTooLargeFailsAlone(t *testing.T) {
	in, cli, _ := sizedEtcd(t, 256<<10) // etcd takes 256 KiB; the Batcher believes 1.5 MiB
	b := NewBatcher(cli, 10*time.Second, etcdembed.MaxTxnOps, DefaultMaxRequestBytes, 1)
	defer b.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	item := func(key string, value int) Txn {
		cmps, _ := createItem(key)
		return Txn{If: cmps, Then: []clientv3.Op{clientv3.OpPut(key, strings.Repeat("v", value))}}
	}

	// Too large for the Batcher itself: refused before it is queued.
	out := b.Do(ctx, item("huge", 2<<20))
	if !errors.Is(out.Err, ErrTooLarge) || !out.NotSent || errors.Is(out.Err, ErrOutcomeUnknown) {
		t.Fatalf("a 2 MiB item: err %v notSent %v, want ErrTooLarge, not sent", out.Err, out.NotSent)
	}
	if !strings.Contains(out.Err.Error(), "2.0 MiB") {
		t.Errorf("error %q does not say how large the write was", out.Err)
	}

	held, release := holdFirstTxn(t, in)
	const small = 20
	outs := make([]Outcome, small+2)
	var wg sync.WaitGroup
	do := func(i int, key string, value int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = b.Do(ctx, item(key, value))
		}()
	}
	do(0, "first", 10)
	waitFor(t, held, "the first item's Txn to be held")
	for i := 1; i <= small; i++ {
		do(i, fmt.Sprintf("small%02d", i), 20<<10) // 400 KiB together: more than etcd takes
	}
	do(small+1, "big", 300<<10) // fits the Batcher's budget, not etcd's
	waitFor(t, func() bool { return b.queued() == small+1 }, "the items to queue")
	release()
	wg.Wait()
	for i := 0; i <= small; i++ {
		if !outs[i].OK {
			t.Errorf("item %d: ok %v err %v, want written", i, outs[i].OK, outs[i].Err)
		}
	}
	if big := outs[small+1]; !errors.Is(big.Err, ErrTooLarge) || !big.NotSent || errors.Is(big.Err, ErrOutcomeUnknown) {
		t.Errorf("the item etcd refuses: err %v notSent %v, want ErrTooLarge, not sent", big.Err, big.NotSent)
	}
}

// A write refused for its size, by the client (its 2 MiB send limit) or by
// etcd (--max-request-bytes, --max-txn-ops), is a definite failure:
// nothing was applied, and it is ErrTooLarge, not an unknown outcome nor
// etcd being away.
func TestSizeRefusalsAreDefinite(t *testing.T) {
	_, cli, _ := sizedEtcd(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	many := make([]clientv3.Op, etcdembed.MaxTxnOps+1)
	for i := range many {
		many[i] = clientv3.OpPut(fmt.Sprintf("k%04d", i), "v")
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"client send limit", func() error { _, err := cli.Put(ctx, "a", strings.Repeat("v", 3<<20)); return err }},
		{"etcd's request limit", func() error { _, err := cli.Put(ctx, "b", strings.Repeat("v", 1600<<10)); return err }},
		{"etcd's operation limit", func() error { _, err := cli.Txn(ctx).Then(many...).Commit(); return err }},
	} {
		err := tc.call()
		if err == nil {
			t.Fatalf("%s: the call succeeded", tc.name)
		}
		if !etcdstatus.TooLarge(err) || !etcdstatus.NotApplied(err) {
			t.Errorf("%s: %v: TooLarge %v NotApplied %v, want both", tc.name, err, etcdstatus.TooLarge(err), etcdstatus.NotApplied(err))
		}
		if a := Ambiguous(err); !errors.Is(a, ErrTooLarge) || errors.Is(a, ErrOutcomeUnknown) {
			t.Errorf("%s: classified %v, want ErrTooLarge and not an unknown outcome", tc.name, a)
		}
	}
	if holds(t, cli, "a") || holds(t, cli, "b") || holds(t, cli, "k0000") {
		t.Fatal("a write refused for its size was applied")
	}
}

// BenchmarkTxnCost is the sizing's cost per item the Batcher takes: a
// start-shaped write of a long CJK identity (five compares, one put of
// 3000 bytes, five Else reads).
func BenchmarkTxnCost(b *testing.B) {
	w := startShaped(longCJK(1), 3000)
	b.ReportAllocs()
	for b.Loop() {
		_ = w.Cost()
	}
}

// Operations are counted as etcd's checkTxnRequest counts them: the widest
// of a Txn's lists, plus the widest nested Txn it holds.
func TestTxnCostCountsOperationsAsEtcd(t *testing.T) {
	get := clientv3.OpGet("k")
	cmp := clientv3.Compare(clientv3.CreateRevision("k"), "=", 0)
	flat := CostOf([]clientv3.Cmp{cmp, cmp, cmp}, []clientv3.Op{clientv3.OpPut("a", "v")}, []clientv3.Op{get, get, get, get, get})
	if flat.width != 5 {
		t.Errorf("3 compares, 1 put, 5 reads: width %d, want 5", flat.width)
	}
	inner := clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpPut("b", "v"), clientv3.OpPut("c", "v"), clientv3.OpDelete("d")}, nil)
	nested := CostOf([]clientv3.Cmp{cmp}, []clientv3.Op{clientv3.OpPut("a", "v"), inner}, nil)
	if nested.width != 2+3 {
		t.Errorf("a Txn of 2 holding one of 3: width %d, want 5", nested.width)
	}
	if want := []string{"a", "b", "c", "d"}; strings.Join(nested.writes, ",") != strings.Join(want, ",") {
		t.Errorf("writes %v, want %v (nested Txns included)", nested.writes, want)
	}
}

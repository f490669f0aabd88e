package handoff_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/handoff"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// taken records the entries a watcher handed over.
type taken struct {
	mu   sync.Mutex
	seen map[string]int
}

func (k *taken) handle(_ context.Context, e handoff.Entry) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seen[e.Identity+"/"+e.TaskID]++
	return nil
}

func (k *taken) count(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.seen[key]
}

func startWatcher(t *testing.T, cli *clientv3.Client, w *handoff.Watcher) {
	w.Delete = writepath.HandoffDeleter(writepath.NewWriter(cli)) // as the node sets it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func put(t *testing.T, cli *clientv3.Client, keys keyspace.Keys, id, task string) {
	t.Helper()
	op, err := writepath.PutHandoff(keys, "n1", "n2", id, task)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Do(ctx, op); err != nil {
		t.Fatal(err)
	}
}

// An entry is picked up by the watch at once (polling is off: an hour away)
// and deleted once taken.
func TestWatchPicksUpAtOnce(t *testing.T) {
	etcd := tst.StartEtcd(t)
	cli := etcd.Client(t)
	keys := keyspace.New("/t/")
	k := &taken{seen: map[string]int{}}
	startWatcher(t, cli, &handoff.Watcher{Client: cli, Keys: keys, Node: "n1", Period: time.Hour, Start: time.Hour,
		Timeout: 5 * time.Second, Log: hclog.NewNullLogger(), Handle: k.handle})
	put(t, cli, keys, "alice", "t1")
	tst.Eventually(t, 10*time.Second, func() bool { return k.count("alice/t1") >= 1 }, "the entry to be taken")
	tst.Eventually(t, 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cli.Get(ctx, keys.Area("n1"), clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 0
	}, "the entry to be deleted")
}

// A watch broken by an etcd restart, with history compacted right after:
// whichever way the watch comes back — resumed by the client, or refused as
// compacted and replaced by a fresh listing — an entry written across the
// break is taken, long before the next poll (an hour away).
func TestWatchRecoversFromRestartAndCompaction(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	// The child binds a port of its own choice and reports it; the restart
	// below reuses that address, which the client knows.
	etcd := tst.StartEtcdProcess(t, dir, "http://127.0.0.1:0")
	cli := etcd.Client(t)
	keys := keyspace.New("/t/")
	k := &taken{seen: map[string]int{}}
	startWatcher(t, cli, &handoff.Watcher{Client: cli, Keys: keys, Node: "n1", Period: time.Hour, Start: time.Hour,
		Timeout: time.Second, Log: hclog.NewNullLogger(), Handle: k.handle})
	put(t, cli, keys, "alice", "before")
	tst.Eventually(t, 10*time.Second, func() bool { return k.count("alice/before") == 1 }, "the first entry")

	etcd.Kill()
	tst.StartEtcdProcess(t, dir, etcd.URL)
	// Other writes move the revision on; then the history is compacted, so
	// the old watch cannot resume where it was.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rev int64
	for i := range 5 {
		resp, err := cli.Put(ctx, fmt.Sprintf("/other/%d", i), "x")
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	put(t, cli, keys, "alice", "after")
	if _, err := cli.Compact(ctx, rev+1); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return k.count("alice/after") >= 1 }, "the entry written across the break")
}

// TestBatchesAreTakenAndDeletedTogether: 200 entries written at once reach
// HandleBatch in batches of at most BatchSize; the entries taken are
// deleted, the one refused stays (and is offered again by the next poll),
// and an entry rewritten while its batch was being handled stays too (its
// delete is conditional on the revision delivered).
func TestBatchesAreTakenAndDeletedTogether(t *testing.T) {
	etcd := tst.StartEtcd(t)
	cli := etcd.Client(t)
	keys := keyspace.New("/b/")
	var ops []clientv3.Op
	for i := 0; i < 200; i++ {
		op, err := writepath.PutHandoff(keys, "n1", "n2", fmt.Sprintf("id-%03d", i), "*")
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < len(ops); i += 100 {
		if _, err := cli.Txn(ctx).Then(ops[i : i+100]...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	largest, refusals, rewritten := 0, 0, false
	taken := map[string]int{}
	handle := func(ctx context.Context, es []handoff.Entry) []error {
		errs := make([]error, len(es))
		mu.Lock()
		defer mu.Unlock()
		largest = max(largest, len(es))
		for i, e := range es {
			switch {
			case e.Identity == "id-007" && refusals == 0:
				refusals++
				errs[i] = fmt.Errorf("not now")
			case e.Identity == "id-042" && !rewritten:
				rewritten = true
				op, _ := writepath.PutHandoff(keys, "n1", "n3", "id-042", "*")
				if _, err := cli.Do(ctx, op); err != nil {
					errs[i] = err
				}
				taken[e.Identity]++
			default:
				taken[e.Identity]++
			}
		}
		return errs
	}
	startWatcher(t, cli, &handoff.Watcher{Client: cli, Keys: keys, Node: "n1", Period: 200 * time.Millisecond, Start: 200 * time.Millisecond,
		BatchSize: 64, Timeout: 5 * time.Second, Log: hclog.NewNullLogger(), HandleBatch: handle})
	tst.Eventually(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(taken) == 199 && refusals == 1
	}, "199 entries taken and id-007 refused once")
	// The refused entry, and the one rewritten while it was being handled
	// (the watch's event for the rewrite arrives while the key is in
	// flight), come back with a poll and are taken then.
	tst.Eventually(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return taken["id-007"] == 1 && taken["id-042"] == 2
	}, "id-007 taken after its refusal, id-042's newer write taken again")
	tst.Eventually(t, 10*time.Second, func() bool {
		resp, err := cli.Get(ctx, keys.Area("n1"), clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 0
	}, "the area to be empty")
	mu.Lock()
	defer mu.Unlock()
	if largest > 64 {
		t.Fatalf("a batch of %d entries, want at most 64", largest)
	}
	for id, n := range taken {
		if n != 1 && id != "id-042" {
			t.Errorf("%s taken %d times, want once", id, n)
		}
	}
}

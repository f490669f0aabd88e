package follow_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/internal/follow"
	"github.com/taskd/taskd/internal/keyspace"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

const (
	prefix = "/f/"
	wait   = 10 * time.Second
)

var keys = keyspace.New(prefix)

// cluster is one etcd, a client the follower under test uses (wrapped by
// an etcdfault Injector) and a plain client that writes what the test
// makes the cluster hold.
type cluster struct {
	faults *etcdfault.Injector
	cli    *clientv3.Client
	plain  *clientv3.Client
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	e := tst.StartEtcd(t)
	c := &cluster{faults: etcdfault.New(), cli: e.Client(t), plain: e.Client(t)}
	c.faults.Wrap(c.cli)
	return c
}

// watch is the followers' Watch over the wrapped client, with short waits
// between failed lists.
func (c *cluster) watch() follow.Watch {
	return follow.Watch{Client: c.cli, Keys: keys, EtcdTimeout: 5 * time.Second, MaxWait: 100 * time.Millisecond,
		Logger: hclog.NewNullLogger()}
}

// put writes m at key with the plain client and returns the revision.
func (c *cluster) put(t *testing.T, key string, m proto.Message) int64 {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.plain.Put(ctxFor(t), key, string(b))
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return resp.Header.Revision
}

func (c *cluster) del(t *testing.T, key string) {
	t.Helper()
	if _, err := c.plain.Delete(ctxFor(t), key); err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
}

// get reads key with the plain client.
func (c *cluster) get(t *testing.T, key string) *clientv3.GetResponse {
	t.Helper()
	resp, err := c.plain.Get(ctxFor(t), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return resp
}

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// run runs loop (a follower's Run) until the test ends; the cleanup waits
// for it to return.
func run(t *testing.T, loop func(context.Context)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		loop(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// loadThenRun loads f (a follower), failing the test on an error, and runs
// it until the test ends.
func loadThenRun(t *testing.T, f interface {
	Load(context.Context) error
	Run(context.Context)
}) {
	t.Helper()
	if err := f.Load(ctxFor(t)); err != nil {
		t.Fatalf("Load: %v", err)
	}
	run(t, f.Run)
}

// handed records what a follower hands the node side of a test, one line
// each.
type handed struct {
	mu    sync.Mutex
	lines []string
}

func (h *handed) record(line string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, line)
}

// all is the lines recorded so far, in order.
func (h *handed) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.lines)
}

// count is how many lines were recorded.
func (h *handed) count() int { return len(h.all()) }

// within fails the test if f has not returned within the wait: a
// follower that called back while holding its lock would deadlock there.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("%s did not return within %v", what, wait)
	}
}

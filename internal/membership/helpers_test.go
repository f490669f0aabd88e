package membership_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/membership"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

const (
	prefix = "/m/"
	name   = "n1"
	key    = prefix + "nodes/" + name
	ttl    = 2 * time.Second
	wait   = 10 * time.Second
)

// fakeNode is the node side of a Member: it records every callback, in
// order.
type fakeNode struct {
	mu          sync.Mutex
	rec         *storev1.NodeRecord // what Record encodes
	calls       []string            // "registered", "fence", "rejoined", "rejoin failed" (Renewed is only counted)
	renewed     atomic.Int64
	stopping    atomic.Bool
	replaced    error
	rejoinFails int // Rejoined fails this many times first
}

var errReadopt = errors.New("re-adoption failed")

func (f *fakeNode) Record() ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return proto.Marshal(f.rec)
}

func (f *fakeNode) Registered(context.Context) error { f.call("registered"); return nil }
func (f *fakeNode) Fence()                           { f.call("fence") }

func (f *fakeNode) Renewed() { f.renewed.Add(1) }

func (f *fakeNode) Rejoined(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rejoinFails > 0 {
		f.rejoinFails--
		f.calls = append(f.calls, "rejoin failed")
		return errReadopt
	}
	f.calls = append(f.calls, "rejoined")
	return nil
}

func (f *fakeNode) Stopping() bool { return f.stopping.Load() }

func (f *fakeNode) Replaced(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replaced = err
}

func (f *fakeNode) call(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, what)
}

// called is the callbacks so far, in order.
func (f *fakeNode) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// count is how many times the node was told what.
func (f *fakeNode) count(what string) int {
	n := 0
	for _, c := range f.called() {
		if c == what {
			n++
		}
	}
	return n
}

func (f *fakeNode) renewals() int { return int(f.renewed.Load()) }

func (f *fakeNode) setAddress(address string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rec = proto.Clone(f.rec).(*storev1.NodeRecord)
	f.rec.Address = address
}

// setup returns a Member of node n1 (incarnation inc) over cli, with node
// as its node side; edit adjusts its config.
func setup(t *testing.T, cli *clientv3.Client, inc string, edit func(*membership.Config)) (*membership.Member, *fakeNode) {
	t.Helper()
	node := &fakeNode{rec: &storev1.NodeRecord{Name: name, Incarnation: inc}}
	cfg := membership.Config{Client: cli, Prefix: prefix, Name: name, Incarnation: inc, TTL: ttl,
		EtcdTimeout: 5 * time.Second, Logger: hclog.NewNullLogger(), Node: node}
	if edit != nil {
		edit(&cfg)
	}
	return membership.New(cfg), node
}

// run runs m's renewals until the test ends; the channel is closed once
// Run returned.
func run(t *testing.T, m *membership.Member) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return done
}

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// register registers m, failing the test on an error.
func register(t *testing.T, m *membership.Member) {
	t.Helper()
	if err := m.Register(ctxFor(t)); err != nil {
		t.Fatalf("register: %v", err)
	}
}

// registration reads the node's registration: its record and lease.
func registration(t *testing.T, cli *clientv3.Client) (*storev1.NodeRecord, clientv3.LeaseID, *clientv3.GetResponse) {
	t.Helper()
	resp, err := cli.Get(ctxFor(t), key)
	if err != nil {
		t.Fatalf("read the registration: %v", err)
	}
	if len(resp.Kvs) != 1 {
		return nil, 0, resp
	}
	var rec storev1.NodeRecord
	if err := proto.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		t.Fatal(err)
	}
	return &rec, clientv3.LeaseID(resp.Kvs[0].Lease), resp
}

// putRecord writes a record of incarnation inc (at address) as the node's
// registration under a new lease of 30s, as another process would, and
// returns the lease.
func putRecord(t *testing.T, cli *clientv3.Client, inc, address string) clientv3.LeaseID {
	t.Helper()
	ctx := ctxFor(t)
	l, err := cli.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(&storev1.NodeRecord{Name: name, Incarnation: inc, Address: address})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, key, string(b), clientv3.WithLease(l.ID)); err != nil {
		t.Fatal(err)
	}
	return l.ID
}

// leaseLive reports whether etcd still knows lease.
func leaseLive(t *testing.T, cli *clientv3.Client, lease clientv3.LeaseID) bool {
	t.Helper()
	resp, err := cli.TimeToLive(ctxFor(t), lease)
	if err != nil {
		t.Fatal(err)
	}
	return resp.TTL > 0
}

func etcd(t *testing.T) *clientv3.Client {
	t.Helper()
	return tst.StartEtcd(t).Client(t)
}

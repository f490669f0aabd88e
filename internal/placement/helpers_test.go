package placement

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/etcdembed"
	"github.com/taskd/taskd/pkg/identity"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The tests here run a Leader (or its steps) against an embedded etcd
// whose cluster the test writes by hand: registrations, mappings with
// their ownership index, handoff entries. They are internal tests (the
// taskservicetest helpers import pkg/taskservice, which imports this
// package).

const (
	prefix = "/p/"
	wait   = 10 * time.Second
)

var keys = keyspace.New(prefix)

// fixture is one etcd and a client of it.
type fixture struct {
	t   *testing.T
	cli *clientv3.Client
	ctx context.Context
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: filepath.Join(t.TempDir(), "etcd"), ClientURL: "http://127.0.0.1:0", Fast: true})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(srv.Close)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.ClientURL()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	tctx, tcancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(tcancel)
	return &fixture{t: t, cli: cli, ctx: tctx}
}

// grant returns a new lease.
func (f *fixture) grant() clientv3.LeaseID {
	f.t.Helper()
	resp, err := f.cli.Grant(f.ctx, 60)
	if err != nil {
		f.t.Fatalf("grant: %v", err)
	}
	return resp.ID
}

// register writes the record of node name (incarnation inc) in state
// under a lease of its own, and returns the node as the leader reads it.
func (f *fixture) register(name, inc string, state taskdv1.NodeState) *Candidate {
	f.t.Helper()
	lease := f.grant()
	b, err := proto.Marshal(&storev1.NodeRecord{Name: name, Incarnation: inc, State: state})
	if err != nil {
		f.t.Fatal(err)
	}
	resp, err := f.cli.Put(f.ctx, keys.Node(name), string(b), clientv3.WithLease(lease))
	if err != nil {
		f.t.Fatalf("register %s: %v", name, err)
	}
	return &Candidate{Name: name, Inc: inc, Lease: int64(lease), Rev: resp.Header.Revision, State: state}
}

// own maps ids to node (incarnation inc), with its ownership index.
func (f *fixture) own(node, inc string, ids ...string) {
	f.t.Helper()
	shapes := writepath.NewShapes(prefix, node)
	var ops []clientv3.Op
	for _, id := range ids {
		ops = append(ops, shapes.Assign(id, "", node, inc)...)
	}
	if _, err := writepath.NewWriter(f.cli).Commit(f.ctx, writepath.Txn{Then: ops}); err != nil {
		f.t.Fatalf("map %v to %s: %v", ids, node, err)
	}
}

func (f *fixture) put(key, value string) {
	f.t.Helper()
	if _, err := f.cli.Put(f.ctx, key, value); err != nil {
		f.t.Fatalf("put %s: %v", key, err)
	}
}

// count is the number of keys under prefix.
func (f *fixture) count(prefix string) int64 {
	f.t.Helper()
	resp, err := f.cli.Get(f.ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		f.t.Fatalf("count %s: %v", prefix, err)
	}
	return resp.Count
}

// get reads key (nil if absent).
func (f *fixture) get(key string) *clientv3.GetResponse {
	f.t.Helper()
	resp, err := f.cli.Get(f.ctx, key)
	if err != nil {
		f.t.Fatalf("get %s: %v", key, err)
	}
	return resp
}

// owner reads the mapping of id.
func (f *fixture) owner(id string) identity.Owner {
	f.t.Helper()
	o, err := identity.NewMap(f.cli, keys).Get(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return o
}

// round runs a sweep and a rebalancing round of ld under l, failing the
// test on an error; of says of which holding, in the message.
func (f *fixture) round(ld *Leader, l identity.Leadership, of string) {
	f.t.Helper()
	if err := ld.sweep(f.ctx, l); err != nil {
		f.t.Fatalf("sweep%s: %v", of, err)
	}
	if err := ld.rebalance(f.ctx, l); err != nil {
		f.t.Fatalf("rebalance%s: %v", of, err)
	}
}

// leaseOf is a lease source the test sets.
type leaseOf struct{ id atomic.Int64 }

func newLeaseOf(id clientv3.LeaseID) *leaseOf {
	l := &leaseOf{}
	l.set(id)
	return l
}

func (l *leaseOf) Lease() clientv3.LeaseID { return clientv3.LeaseID(l.id.Load()) }

func (l *leaseOf) set(id clientv3.LeaseID) { l.id.Store(int64(id)) }

// everyIdentity is the identity of the tests' EVERY_NODE tasks.
const everyIdentity = "e"

// fakeNode is the node side of a Leader: EveryDeleteOps deletes the task's
// key (of identity everyIdentity), and is recorded.
type fakeNode struct {
	mu      sync.Mutex
	deleted []string // the task ids asked for
}

func (n *fakeNode) EveryDeleteOps(_ context.Context, rec *storev1.TaskRecord) ([]clientv3.Op, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleted = append(n.deleted, rec.Id)
	return []clientv3.Op{clientv3.OpDelete(keys.Every(everyIdentity, rec.Id))}, nil
}

func (n *fakeNode) asked() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.deleted...)
}

// leader returns the Leader of node name (incarnation inc) under lease,
// with rebalancing off and no periodic sweep; edit adjusts its config.
func (f *fixture) leader(name, inc string, lease *leaseOf, node Node, edit func(*Config)) *Leader {
	cfg := Config{
		Cluster: Cluster{Client: f.cli, Keys: keys, Map: identity.NewMap(f.cli, keys), Shapes: writepath.NewShapes(prefix, name),
			Writer: writepath.NewWriter(f.cli), EtcdTimeout: 5 * time.Second, MaxTxnOps: 128},
		Name: name, Incarnation: inc, Lease: lease, Node: node,
		Retry: 100 * time.Millisecond, SweepEvery: time.Hour, Retention: time.Hour,
		DisableRebalance: true, RebalanceInterval: time.Hour, RebalanceRate: 50, RebalanceTolerance: 10,
		Logger: hclog.NewNullLogger(),
	}
	if edit != nil {
		edit(&cfg)
	}
	return New(cfg)
}

// campaign takes the leadership for ld, as Run does before it leads.
func (f *fixture) campaign(ld *Leader) identity.Leadership {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	l, err := ld.campaign(ctx)
	if err != nil {
		f.t.Fatalf("campaign: %v", err)
	}
	return l
}

// eventually polls cond until it holds, or fails the test after wait.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", wait, msg)
		}
		<-tick.C
	}
}

// clientLease is c's registration lease as etcd's client names it.
func clientLease(c *Candidate) clientv3.LeaseID { return clientv3.LeaseID(c.Lease) }

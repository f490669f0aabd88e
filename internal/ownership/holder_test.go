package ownership_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/follow"
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/ownership"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

const (
	prefix = "/o/"
	name   = "n1"
	wait   = 10 * time.Second
)

// engine is the node side of a Holder: it holds identities under epochs
// and records what it is told, each call on calls.
type engine struct {
	mu    sync.Mutex
	held  map[string]int64
	calls chan string // "left a", "forget a", "install a"
}

func newEngine(held map[string]int64) *engine {
	return &engine{held: held, calls: make(chan string, 64)}
}

func (e *engine) Install(id string, epoch int64, _ []pending.Stored, _ int64) {
	e.mu.Lock()
	e.held[id] = epoch
	e.mu.Unlock()
	e.calls <- "install " + id
}

func (e *engine) Held(id string) (int64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep, ok := e.held[id]
	return ep, ok
}

// Identities lists the held identities in descending order, so a test
// knows the order the holder looks at them in.
func (e *engine) Identities() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ids []string
	for id := range e.held {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids
}

func (e *engine) drop(what, id string) {
	e.mu.Lock()
	delete(e.held, id)
	e.mu.Unlock()
	e.calls <- what + " " + id
}

func (e *engine) Left(id string, _ int64)                                 { e.drop("left", id) }
func (e *engine) Forget(id string)                                        { e.drop("forget", id) }
func (e *engine) TaskGone(string, string)                                 {}
func (e *engine) HandedOff(string, string, string, string)                {}
func (e *engine) Movable(bool) ([]identity.Owner, int)                    { return nil, 0 }
func (e *engine) ChooseToMove(int, time.Time, func(string) bool) []string { return nil }
func (e *engine) StopLeaving([]string)                                    {}
func (e *engine) Running() bool                                           { return true }

// next returns the engine's next call, failing the test after wait.
func (e *engine) next(t *testing.T) string {
	t.Helper()
	select {
	case c := <-e.calls:
		return c
	case <-time.After(wait):
		t.Fatal("the engine was not called")
		return ""
	}
}

func newHolder(t *testing.T, eng ownership.Engine) (*ownership.Holder, *clientv3.Client) {
	cli := tst.StartEtcd(t).Client(t)
	keys := keyspace.New(prefix)
	log := hclog.NewNullLogger()
	return ownership.New(ownership.Config{
		Name: name, Incarnation: "inc1", EtcdTimeout: 5 * time.Second, MaxTxnOps: 128,
		Client: cli, Keys: keys, Map: identity.NewMap(cli, keys),
		Shapes: writepath.NewShapes(prefix, name), Writer: writepath.NewWriter(cli),
		Watch:  follow.Watch{Client: cli, Keys: keys, EtcdTimeout: 5 * time.Second, MaxWait: time.Second, Logger: log},
		Engine: eng, Logger: log, Life: context.Background(),
	}), cli
}

// run runs loop until the test ends.
func run(t *testing.T, loop func(context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); loop(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// A repair reads the identity again and forgets one that is not mapped
// here; a repair asked only if the identity is missing is not made for an
// identity the engine holds.
func TestRepairForgetsWhatIsNotMappedHereAndSkipsWhatIsHeld(t *testing.T) {
	eng := newEngine(map[string]int64{"held": 5, "stale": 7})
	h, _ := newHolder(t, eng)
	// Both are due in the repair loop's first round, "held" first.
	h.RepairIfMissing("held", 0)
	h.Repair("stale")
	run(t, h.RunRepairs)
	if got := eng.next(t); got != "forget stale" {
		t.Fatalf("first engine call = %q, want forget stale", got)
	}
	if _, ok := eng.Held("held"); !ok {
		t.Fatal("the held identity was read again and forgotten")
	}
}

// The index's first listing drops the identities the engine holds that
// the index does not name, and keeps those it does.
func TestIndexListingDropsIdentitiesNoLongerOwnedHere(t *testing.T) {
	eng := newEngine(map[string]int64{"gone": 3, "kept": 4})
	h, cli := newHolder(t, eng)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := cli.Put(ctx, keyspace.New(prefix).Owned(name, "kept"), ""); err != nil {
		t.Fatal(err)
	}
	run(t, h.RunIndex)
	// "kept" is looked at first (Identities' order): a wrong drop of it
	// would be the first call.
	if got := eng.next(t); got != "left gone" {
		t.Fatalf("first engine call = %q, want left gone", got)
	}
	if _, ok := eng.Held("kept"); !ok {
		t.Fatal("an identity the index names was dropped")
	}
}

package placement

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

const (
	running  = taskdv1.NodeState_NODE_STATE_RUNNING
	draining = taskdv1.NodeState_NODE_STATE_DRAINING
)

// TestSweepMovesADeadNodesIdentitiesToTheLeastLoaded checks that a sweep
// moves every identity of a node that owns some but is not registered to
// the RUNNING nodes, one at a time to the least loaded (ties by name), a
// node that is not RUNNING taking none; that each moved identity is handed
// to its new owner (a "*" entry in its handoff area) and leaves the dead
// node's index; and that the dead node's handoff area is dropped.
func TestSweepMovesADeadNodesIdentitiesToTheLeastLoaded(t *testing.T) {
	f := newFixture(t)
	b := f.register("b", "0b", running)
	f.register("c", "0c", running)
	f.register("d", "0d", draining)
	f.own("c", "0c", "y1", "y2")
	f.own("a", "0a", "x1", "x2", "x3", "x4") // a is not registered: dead
	f.put(keys.Entries("a", "x1")+"t1", "left behind")
	ld := f.leader("b", "0b", newLeaseOf(clientLease(b)), &fakeNode{}, nil)
	l := f.campaign(ld)
	if err := ld.sweep(f.ctx, l); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	// b 0, c 2: x1 and x2 to b, x3 to b on the tie by name, x4 to c.
	want := map[string]string{"x1": "b", "x2": "b", "x3": "b", "x4": "c"}
	for id, to := range want {
		o := f.owner(id)
		if !o.Mapped || o.Node != to || o.Incarnation != "0"+to {
			t.Errorf("%s mapped to %s/%s (mapped %v), want %s/0%s", id, o.Node, o.Incarnation, o.Mapped, to, to)
		}
		if n := f.count(keys.Entries(to, id)); n != 1 {
			t.Errorf("%s: %d handoff entries at %s, want 1", id, n, to)
		}
	}
	for node, n := range map[string]int64{"a": 0, "b": 3, "c": 3, "d": 0} {
		if got := f.count(keys.OwnedPrefix(node)); got != n {
			t.Errorf("%s's ownership index holds %d, want %d", node, got, n)
		}
	}
	if n := f.count(keys.Area("a")); n != 0 {
		t.Errorf("the dead node's handoff area holds %d keys, want none", n)
	}
}

// TestALeaderWhoseHoldingEndedWritesNothing checks that every write of the
// leader carries its leadership's fence: once the leader key it holds is
// gone, a sweep drops no dead node's area and purges no EVERY_NODE task,
// and a rebalancing round writes no request; under a new holding the same
// steps do. Only a cancelled EVERY_NODE task past its retention is purged.
func TestALeaderWhoseHoldingEndedWritesNothing(t *testing.T) {
	f := newFixture(t)
	s := f.register("s", "05", running)
	tg := f.register("t", "07", running)
	var ids []string
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("i%02d", i))
	}
	f.own("s", "05", ids...)
	f.put(keys.Entries("a", "x")+"t1", "left behind by a dead node that owns nothing")
	every := func(id string, state taskdv1.TaskState, finished time.Time) {
		b, err := proto.Marshal(&storev1.TaskRecord{Id: id, State: state, FinishedAt: timestamppb.New(finished)})
		if err != nil {
			t.Fatal(err)
		}
		f.put(keys.Every(everyIdentity, id), string(b))
	}
	every("old", taskdv1.TaskState_TASK_STATE_CANCELED, time.Now().Add(-2*time.Hour))
	every("recent", taskdv1.TaskState_TASK_STATE_CANCELED, time.Now())
	every("live", taskdv1.TaskState_TASK_STATE_SCHEDULED, time.Now().Add(-2*time.Hour))

	lease := newLeaseOf(f.grant())
	node := &fakeNode{}
	ld := f.leader("t", "07", lease, node, func(c *Config) { c.RebalanceRate = 3; c.RebalanceTolerance = 0 })
	ended := f.campaign(ld)
	if _, err := f.cli.Revoke(f.ctx, lease.Lease()); err != nil {
		t.Fatalf("revoke the leader's lease: %v", err)
	}
	f.round(ld, ended, " of an ended holding")
	if n := f.count(keys.Area("a")); n != 1 {
		t.Errorf("an ended holding dropped the dead node's area (%d keys left)", n)
	}
	if n := f.count(keys.AllEvery()); n != 3 {
		t.Errorf("an ended holding purged EVERY_NODE tasks: %d of 3 left", n)
	}
	if n := f.count(keys.Controls()); n != 0 {
		t.Errorf("an ended holding wrote %d rebalancing requests", n)
	}

	lease.set(f.grant())
	l := f.campaign(ld)
	if l.Rev == ended.Rev {
		t.Fatalf("the new holding has the ended one's revision %d", l.Rev)
	}
	f.round(ld, l, "")
	if n := f.count(keys.Area("a")); n != 0 {
		t.Errorf("the dead node's area holds %d keys, want none", n)
	}
	// Asked by both sweeps (the deletes are built before the fenced Txn),
	// written by the second only.
	if got := node.asked(); !slices.Equal(got, []string{"old", "old"}) {
		t.Errorf("the node was asked to delete %v, want [old old]", got)
	}
	for id, want := range map[string]int{"old": 0, "recent": 1, "live": 1} {
		if got := len(f.get(keys.Every(everyIdentity, id)).Kvs); got != want {
			t.Errorf("EVERY_NODE task %s: %d keys, want %d", id, got, want)
		}
	}
	// s holds all 10, t none: three moves (the rate) from s to t.
	resp := f.get(keys.RebalanceRequest("s"))
	if len(resp.Kvs) != 1 {
		t.Fatalf("%d rebalancing requests for s, want 1", len(resp.Kvs))
	}
	kv := resp.Kvs[0]
	req, err := ParseRequest(string(kv.Value))
	if err != nil {
		t.Fatalf("the request does not parse: %v", err)
	}
	want := Request{Source: "05", LeaderRev: l.Rev, Leader: "t",
		Targets: []Target{{Name: "t", Inc: "07", Lease: tg.Lease, Rev: tg.Rev, Count: 3}}}
	if fmt.Sprint(req) != fmt.Sprint(want) {
		t.Errorf("request %+v, want %+v", req, want)
	}
	if kv.Lease != s.Lease {
		t.Errorf("the request is under lease %d, want the source's %d", kv.Lease, s.Lease)
	}
	if n := f.count(keys.RebalanceRequest("t")); n != 0 {
		t.Errorf("the least loaded node was asked for moves")
	}
	// A request not served is replaced by the next round's.
	if err := ld.rebalance(f.ctx, l); err != nil {
		t.Fatalf("second rebalance: %v", err)
	}
	if again := f.get(keys.RebalanceRequest("s")); len(again.Kvs) != 1 || again.Kvs[0].ModRevision <= kv.ModRevision ||
		string(again.Kvs[0].Value) != string(kv.Value) {
		t.Errorf("the second round's request %v, want the same request rewritten", again.Kvs)
	}
}

// TestLeaderSweepsWhenANodeDies checks Run: the leader claims the leader
// key under its node's lease, with its name and incarnation, and a node
// whose registration goes away has its identities moved at once (the
// periodic sweep is an hour away); Run returns when its context ends.
func TestLeaderSweepsWhenANodeDies(t *testing.T) {
	f := newFixture(t)
	b := f.register("b", "0b", running)
	d := f.register("d", "0d", running)
	f.own("d", "0d", "z1", "z2")
	ld := f.leader("b", "0b", newLeaseOf(clientLease(b)), &fakeNode{}, nil)
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() { defer close(done); ld.Run(ctx) }()
	defer func() { cancel(); <-done }()

	eventually(t, func() bool {
		kvs := f.get(keys.Leader()).Kvs
		return len(kvs) == 1 && string(kvs[0].Value) == "b 0b" && kvs[0].Lease == b.Lease
	}, "b does not hold the leader key")
	if o := f.owner("z1"); o.Node != "d" {
		t.Fatalf("z1 moved to %s while d was registered", o.Node)
	}
	if _, err := f.cli.Revoke(f.ctx, clientLease(d)); err != nil {
		t.Fatalf("revoke d's lease: %v", err)
	}
	eventually(t, func() bool {
		return f.owner("z1").Node == "b" && f.owner("z2").Node == "b" && f.count(keys.OwnedPrefix("d")) == 0
	}, "the dead node's identities were not moved to b")
	cancel()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("Run did not return after its context ended")
	}
}

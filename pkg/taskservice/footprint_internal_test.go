package taskservice

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/pkg/etcdembed"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestStartUpGlancesAtFarOffTasks: a node that starts under the name of
// one that held tasks loads the plainly waiting ones due beyond ColdAfter
// from a glance, cold, without decoding them, and decodes the others (due
// soon, or allowing overlap); the glanced task is then read back and runs
// at its due time as run 1.
func TestStartUpGlancesAtFarOffTasks(t *testing.T) {
	cli := etcdClient(t)
	ran := make(chan *Run, 4)
	cfg := Config{Name: "g1", Client: cli, ColdAfter: 2 * time.Second, LookAhead: time.Second,
		Handlers: map[string]Handler{"k": HandlerFunc(func(_ context.Context, r *Run) error { ran <- r; return nil })}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func() *Node {
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return n
	}
	at := func(d time.Duration) []*taskdv1.Trigger {
		return []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: timestamppb.New(time.Now().Add(d))}}}}
	}
	n1 := start()
	far := &taskdv1.TaskSpec{Identity: "a", Kind: "k", Scope: taskdv1.Scope_SCOPE_IDENTITY, Triggers: at(5 * time.Second)}
	farOverlap := &taskdv1.TaskSpec{Identity: "a", Kind: "k", Scope: taskdv1.Scope_SCOPE_IDENTITY, Triggers: at(time.Hour), AllowOverlap: true}
	near := &taskdv1.TaskSpec{Identity: "b", Kind: "k", Scope: taskdv1.Scope_SCOPE_IDENTITY, Triggers: at(1500 * time.Millisecond)}
	due := far.Triggers[0].GetOnce().At.AsTime()
	scheduled, err := n1.Schedule(ctx, []*taskdv1.TaskSpec{far, farOverlap, near})
	if err != nil {
		t.Fatal(err)
	}
	if err := n1.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	n2 := start()
	defer func() { _ = n2.Stop(ctx) }()
	n2.d.Lock()
	glanced := n2.d.GlancedLocked()
	n2.d.Unlock()
	if glanced != 1 {
		t.Fatalf("%d tasks loaded from a glance, want 1 (the plainly waiting one due beyond ColdAfter)", glanced)
	}
	if c := n2.Stats().Cold; c != 1 {
		t.Fatalf("%d cold tasks after the start, want 1", c)
	}
	farID := scheduled[0].Task.GetId()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case r := <-ran:
			if r.TaskID != farID {
				continue // the near task's run
			}
			if r.RunNumber != 1 {
				t.Fatalf("the glanced task ran as run %d, want 1", r.RunNumber)
			}
			if now := time.Now(); !r.FireTime.Equal(due) || now.Before(due) {
				t.Fatalf("the glanced task ran at %s for fire time %s; due %s", now, r.FireTime, due)
			}
			return
		case <-deadline:
			t.Fatal("the glanced task did not run")
		}
	}
}

// TestIdleIdentityHoldsNoStartQueues: an identity holds its start queues
// and slot count (identRun) while its runs are in flight, after its
// starter has gone, and drops them when the last run gives its slot back.
func TestIdleIdentityHoldsNoStartQueues(t *testing.T) {
	cli := etcdClient(t)
	var ran atomic.Int64
	release := make(chan struct{})
	cfg := Config{Name: "i1", Client: cli,
		Handlers: map[string]Handler{"k": HandlerFunc(func(ctx context.Context, _ *Run) error {
			ran.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Stop(ctx) }()
	var specs []*taskdv1.TaskSpec
	for range 50 {
		specs = append(specs, &taskdv1.TaskSpec{Identity: "a", Kind: "k", Scope: taskdv1.Scope_SCOPE_IDENTITY,
			Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}}})
	}
	if _, err := n.Schedule(ctx, specs); err != nil {
		t.Fatal(err)
	}
	owned := func() (bool, bool) {
		n.d.Lock()
		defer n.d.Unlock()
		st := n.d.Idents["a"]
		return st != nil, st != nil && st.Active != nil
	}
	waitFor(t, func() bool { return ran.Load() == 50 }, "the 50 runs to be in their handlers")
	waitFor(t, func() bool {
		n.d.Lock()
		defer n.d.Unlock()
		r := n.d.Idents["a"].Active
		return r != nil && !r.Starting && r.Held == 50
	}, "the starter to be gone with the 50 runs holding their slots")
	close(release)
	waitFor(t, func() bool { ok, r := owned(); return ok && !r }, "the identity, idle, to drop its start queues")
	// The shared zero held.Extra that entries without one read (Ex) must
	// never have been written to.
	if held.NoExtra != (held.Extra{}) {
		t.Fatalf("held.NoExtra was written: %+v", held.NoExtra)
	}
}

// etcdClient starts an embedded etcd and returns a client of it.
func etcdClient(t *testing.T) *clientv3.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: filepath.Join(t.TempDir(), "etcd"), ClientURL: "http://127.0.0.1:0", Fast: true})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(srv.Close)
	cli, err := DialEtcd([]string{srv.ClientURL()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
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

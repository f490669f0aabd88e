package writepath

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/keyspace"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// A run's start whose fence fails reads, in its Else, what failed it, and
// the caller finds each read by name: here the kind's pause, then a moved
// mapping and a changed task. A shape that put its Else reads in another
// order, or a Refusal that named them by the wrong index, fails this.
func TestStartRefusalNamesWhatFailedIt(t *testing.T) {
	_, cli, _ := faultyEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := NewShapes("/t/", "n1")
	keys := keyspace.New("/t/")
	w := NewWriter(cli)
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, s.Registration(), "n1", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	mapped, err := cli.Put(ctx, keys.Mapping("alice"), "m")
	if err != nil {
		t.Fatal(err)
	}
	rec := &storev1.TaskRecord{Id: "01JTASKIDTASKIDTASKIDTASKI", Spec: &taskdv1.TaskSpec{Identity: "alice", Kind: "mail"}}
	put, err := s.PutTask(rec)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := cli.Do(ctx, put)
	if err != nil {
		t.Fatal(err)
	}
	fence := RunFence{Identity: "alice", Task: rec.Id, Epoch: mapped.Header.Revision, TaskRev: stored.Put().Header.Revision}
	start := func() Refusal {
		t.Helper()
		txn, err := s.Start(fence, Lease(lease.ID), Pauses{Identity: "alice", Kind: "mail"}, rec)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := w.Commit(ctx, txn)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Succeeded {
			t.Fatal("the start succeeded; want its fence to fail")
		}
		return txn.Refusal(resp.Responses)
	}
	if _, err := cli.Put(ctx, keys.PauseKind("mail"), "p"); err != nil {
		t.Fatal(err)
	}
	r := start()
	if r.PauseKind == nil || len(r.PauseKind.Kvs) != 1 || string(r.PauseKind.Kvs[0].Value) != "p" {
		t.Fatalf("Refusal.PauseKind = %v, want the kind's pause", r.PauseKind)
	}
	if r.PauseIdentity == nil || len(r.PauseIdentity.Kvs) != 0 {
		t.Fatalf("Refusal.PauseIdentity = %v, want an empty read", r.PauseIdentity)
	}
	if r.Registration == nil || len(r.Registration.Kvs) != 1 || r.Registration.Kvs[0].Lease != int64(lease.ID) {
		t.Fatalf("Refusal.Registration = %v, want this node's registration", r.Registration)
	}
	if _, err := cli.Delete(ctx, keys.PauseKind("mail")); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, keys.Mapping("alice"), "moved"); err != nil {
		t.Fatal(err)
	}
	r = start()
	if r.Mapping == nil || len(r.Mapping.Kvs) != 1 || string(r.Mapping.Kvs[0].Value) != "moved" {
		t.Fatalf("Refusal.Mapping = %v, want the moved mapping", r.Mapping)
	}
	if r.Task == nil || len(r.Task.Kvs) != 1 || r.Task.Kvs[0].ModRevision != fence.TaskRev {
		t.Fatalf("Refusal.Task = %v, want the task as stored", r.Task)
	}
	if r.Shared != nil {
		t.Fatalf("Refusal.Shared = %v, want nil: a start of an IDENTITY task does not read it", r.Shared)
	}
}

package writepath

import (
	"context"
	"strings"
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

// TestFollowerRefusals checks that a followers' write that fails names
// what its Else read: a calendar in use names the calendar and one user, a
// pause in force names that pause.
func TestFollowerRefusals(t *testing.T) {
	_, _, cli := faultyEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, w := NewShapes("/t/", "n1"), NewWriter(cli)

	store, err := s.StoreCalendar(&taskdv1.Calendar{Name: "hol"}, 0, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := w.Commit(ctx, store); err != nil || !resp.Succeeded {
		t.Fatalf("store calendar: %v %v", resp, err)
	}
	rec := &storev1.TaskRecord{Id: "t1", Spec: &taskdv1.TaskSpec{Identity: "a"}}
	if resp, err := w.Commit(ctx, s.LocalRefs(rec, []string{"hol"}, 0)); err != nil || !resp.Succeeded {
		t.Fatalf("local refs: %v %v", resp, err)
	}
	del := s.DeleteCalendar("hol")
	resp, err := w.Commit(ctx, del)
	if err != nil || resp.Succeeded {
		t.Fatalf("delete of a calendar in use: %v %v", resp, err)
	}
	r := del.Refusal(resp.Responses)
	if r.Calendar == nil || len(r.Calendar.Kvs) != 1 {
		t.Fatalf("refusal's calendar: %v", r.Calendar)
	}
	if r.CalendarUser == nil || len(r.CalendarUser.Kvs) != 1 || !strings.HasSuffix(string(r.CalendarUser.Kvs[0].Key), "/n/n1/a/t1") {
		t.Fatalf("refusal's calendar user: %v", r.CalendarUser)
	}
	if resp, err := w.Commit(ctx, s.DropLocalRefs(rec, []string{"hol"})); err != nil || !resp.Succeeded {
		t.Fatalf("drop local refs: %v %v", resp, err)
	}
	resp, err = w.Commit(ctx, del)
	if err != nil || !resp.Succeeded || len(DeletedCalendar(resp).Kvs) != 1 {
		t.Fatalf("delete of an unused calendar: %v %v", resp, err)
	}

	for _, p := range []*taskdv1.Pause{{Identity: "a"}, {Kind: "k"}} {
		txn, err := s.Pause(p)
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := w.Commit(ctx, txn); err != nil || !resp.Succeeded {
			t.Fatalf("pause %v: %v %v", p, resp, err)
		}
		resp, err := w.Commit(ctx, txn)
		if err != nil || resp.Succeeded {
			t.Fatalf("pause %v again: %v %v", p, resp, err)
		}
		r := txn.Refusal(resp.Responses)
		inForce, other := r.PauseIdentity, r.PauseKind
		if p.Kind != "" {
			inForce, other = r.PauseKind, r.PauseIdentity
		}
		if inForce == nil || len(inForce.Kvs) != 1 || other != nil {
			t.Fatalf("pause %v again: refusal %+v", p, r)
		}
	}
}

// TestRestoreLocalRefsChunks checks that the restored references are
// written in order, in Txns of at most maxOps operations.
func TestRestoreLocalRefsChunks(t *testing.T) {
	s := NewShapes("/t/", "n1")
	rec := &storev1.TaskRecord{Id: "t1", Spec: &taskdv1.TaskSpec{Identity: "a"}}
	puts := s.LocalRefPuts(rec, []string{"c1", "c2", "c3", "c4", "c5"}, 7)
	txns := s.RestoreLocalRefs(puts, 2)
	if len(txns) != 3 {
		t.Fatalf("%d Txns, want 3", len(txns))
	}
	var keys []string
	for _, txn := range txns {
		if len(txn.If) != 0 || len(txn.Then) > 2 {
			t.Fatalf("Txn %+v", txn)
		}
		for _, op := range txn.Then {
			keys = append(keys, string(op.KeyBytes()))
		}
	}
	for i, op := range puts {
		if keys[i] != string(op.KeyBytes()) {
			t.Fatalf("put %d is %s, want %s", i, keys[i], op.KeyBytes())
		}
	}
	if len(s.RestoreLocalRefs(nil, 2)) != 0 {
		t.Fatal("Txns for no references")
	}
}

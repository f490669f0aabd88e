package writepath

import (
	"context"
	"strings"
	"testing"
	"time"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

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

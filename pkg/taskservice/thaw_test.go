package taskservice_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/pkg/pending"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The tests of cold tasks (thaw.go). With ColdAfter 2 s a task due 5-6 s
// ahead goes cold when it is scheduled and is read again 2 s (ColdAfter/2
// + LookAhead) before it is due.

const coldAfter = 2 * time.Second

func coldConfig(c *taskservice.Config) {
	c.ColdAfter = coldAfter
	c.LookAhead = time.Second
}

// waitCold waits until n holds want cold tasks, and fails the test if the
// task due at due was not cold well before it (the test would not exercise
// a cold task).
func waitCold(t *testing.T, n *tst.Node, want int, due time.Time) {
	t.Helper()
	tst.Eventually(t, 10*time.Second, func() bool { return n.Stats().Cold == want }, "%d cold tasks", want)
	if time.Until(due) < coldAfter/2+time.Second {
		t.Fatalf("the tasks went cold only %s before they are due", time.Until(due))
	}
}

// ranOnceAtDue waits until task of identity id is COMPLETED on n and
// fails the test unless its handler was called exactly once: run 1, not a
// recovery, on node, not before due.
func ranOnceAtDue(t *testing.T, n *tst.Node, rec *recorder, id, task string, due time.Time, node string) {
	t.Helper()
	waitTaskState(t, n, id, task, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if calls := rec.of(task); len(calls) != 1 || calls[0].Run != 1 || calls[0].Recovery || calls[0].Node != node || calls[0].Start.Before(due) {
		t.Fatalf("calls %+v: want one call of run 1 on %s, not a recovery, not before %s", calls, node, due)
	}
}

func TestColdTaskRunsAtItsDueTime(t *testing.T) {
	e := tst.StartEtcd(t)
	rec := &recorder{}
	n := faultNode(t, e, "n1", nil, rec, nil, coldConfig)
	due := time.Now().Add(5 * time.Second)
	task := scheduleOn(t, n, spec("cold", "rec", once(due)))
	waitCold(t, n, 1, due)
	ranOnceAtDue(t, n, rec, "cold", task.Id, due, "n1")
	if s := n.Stats(); s.Cold != 0 {
		t.Fatalf("%d cold tasks after the run", s.Cold)
	}
}

// A task changed in etcd with no word to its owner (no handoff entry, as a
// bug or a hand edit would leave it) is read again whole when it thaws: the
// node does not run it from the entry it held.
func TestColdTaskChangedBehindTheNodesBackIsReadAgain(t *testing.T) {
	e := tst.StartEtcd(t)
	rec := &recorder{}
	n := faultNode(t, e, "n1", nil, rec, nil, coldConfig)
	due := time.Now().Add(6 * time.Second)
	task := scheduleOn(t, n, spec("edited", "rec", once(due)))
	waitCold(t, n, 1, due)

	cli := e.Client(t)
	ctx, cancel := rpc()
	defer cancel()
	key := keyspace.New("/taskd/").Task("edited", task.Id)
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read %s: %v, %d keys", key, err, len(resp.Kvs))
	}
	stored, err := pending.Decode(resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	stored.State, stored.FinishedAt = taskdv1.TaskState_TASK_STATE_CANCELED, timestamppb.Now()
	b, err := pending.Encode(stored)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, key, string(b)); err != nil {
		t.Fatal(err)
	}

	barrier(t, n, rec, "edited", due)
	if calls := rec.of(task.Id); len(calls) != 0 {
		t.Fatalf("calls %v: the task was cancelled in etcd before it thawed", calls)
	}
	if got := getTask(t, n, "edited", task.Id); got.State != taskdv1.TaskState_TASK_STATE_CANCELED || got.RunCount != 0 {
		t.Fatalf("task %v: want CANCELED, no run", got)
	}
}

// Fault: the reads that thaw a cold task fail, again and again, until
// after its due time. The task is not lost: it stays counted, and it runs
// once, late, when a read succeeds.
func TestColdTaskWhoseReadsFailRunsWhenOneSucceeds(t *testing.T) {
	e := tst.StartEtcd(t)
	in := etcdfault.New()
	rec := &recorder{}
	n := faultNode(t, e, "n1", in, rec, nil, coldConfig)
	due := time.Now().Add(5 * time.Second)
	task := scheduleOn(t, n, spec("unreadable", "rec", once(due)))
	waitCold(t, n, 1, due)
	key := keyspace.New("/taskd/").Task("unreadable", task.Id)
	h := in.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Prefix: key,
		Action: etcdfault.Fail(errors.New("injected: the thaw read fails"))})
	// Past the due time the reads still fail: nothing ran, the task is
	// still held (cold, being read) and still pending.
	tst.Eventually(t, 20*time.Second, func() bool { return h.Hits() >= 2 && time.Now().After(due.Add(500*time.Millisecond)) },
		"failed thaw reads past the due time")
	if calls := rec.of(task.Id); len(calls) != 0 {
		t.Fatalf("calls %v while the task's record could not be read", calls)
	}
	if s := n.Stats(); s.Cold != 1 || s.Scheduled != 1 {
		t.Fatalf("stats %+v: want the task still held, cold and scheduled", s)
	}
	h.Remove()
	ranOnceAtDue(t, n, rec, "unreadable", task.Id, due, "n1")
}

// A cold task survives a restart of its node: the new incarnation loads it
// cold and runs it at its due time.
func TestColdTaskRunsAfterARestart(t *testing.T) {
	e := tst.StartEtcd(t)
	rec := &recorder{}
	n := faultNode(t, e, "n1", nil, rec, nil, coldConfig)
	due := time.Now().Add(6 * time.Second)
	task := scheduleOn(t, n, spec("restarted", "rec", once(due)))
	waitCold(t, n, 1, due)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	n2 := faultNode(t, e, "n1", nil, rec, nil, coldConfig)
	waitCold(t, n2, 1, due)
	ranOnceAtDue(t, n2, rec, "restarted", task.Id, due, "n1")
}

// TestColdTasksOfADeadNodeRunOnTheSurvivor: a node dies holding a task
// due far enough away to be cold; the survivor takes its identity over,
// holds the task cold too (loaded without its record), and runs it once,
// at its due time, as run 1.
func TestColdTasksOfADeadNodeRunOnTheSurvivor(t *testing.T) {
	e := tst.StartEtcd(t)
	rec := &recorder{}
	b := faultNode(t, e, "b", nil, rec, nil, coldConfig)
	aCli := e.Client(t) // a's own client, so that the test can cut it off
	cfg := fastConfig("a", rec, nil)
	coldConfig(&cfg)
	a := tst.StartNode(t, aCli, cfg)
	due := time.Now().Add(9 * time.Second)
	task := scheduleOn(t, a, spec("dead-owner", "rec", once(due)))
	waitCold(t, a, 1, due)
	if err := aCli.Close(); err != nil {
		t.Logf("close a's etcd client: %v", err)
	}
	waitCold(t, b, 1, due)
	ranOnceAtDue(t, b, rec, "dead-owner", task.Id, due, "b")
}

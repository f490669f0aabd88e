package follow_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/internal/follow"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// everyNode is the node side of an EveryNode: it records what it is
// handed, one line each —
//
//	put <identity>/<task> @<rev> [progress <run count> @<rev> | no progress]
//	deleted <identity>/<task>
//	listed <task ids, sorted>
//
// where a put without "progress" or "no progress" came without it.
type everyNode struct {
	handed
}

func (n *everyNode) on() follow.OnEveryNode {
	return follow.OnEveryNode{
		Put: func(t follow.EveryTask) {
			line := fmt.Sprintf("put %s/%s @%d", t.Identity, t.Shared.Id, t.Rev)
			switch {
			case t.WithProgress && t.Progress != nil:
				line += fmt.Sprintf(" progress %d @%d", t.Progress.RunCount, t.ProgressRev)
			case t.WithProgress:
				line += fmt.Sprintf(" no progress @%d", t.ProgressRev)
			}
			n.record(line)
		},
		Deleted: func(id, taskID string) { n.record("deleted " + id + "/" + taskID) },
		Listed: func(stored map[string]bool) {
			var ids []string
			for id := range stored {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			n.record("listed " + strings.Join(ids, " "))
		},
	}
}

func newEveryNode(c *cluster) (*follow.EveryNode, *everyNode) {
	n := &everyNode{}
	return follow.NewEveryNode(c.watch(), "n1", n.on()), n
}

func everyTask(id string) *storev1.TaskRecord {
	return &storev1.TaskRecord{Id: id, Spec: &taskdv1.TaskSpec{Kind: "mail"}}
}

func progress(runs int64) *storev1.EveryNodeProgress {
	return &storev1.EveryNodeProgress{RunCount: runs}
}

func wantLines(t *testing.T, n *everyNode, want ...string) {
	t.Helper()
	if got := n.all(); !slices.Equal(got, want) {
		t.Fatalf("handed\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// Load hands over every EVERY_NODE task with this node's progress on it
// (none stored, and one that does not decode, hand over none), then the
// ids of every task key it read, one whose record does not decode
// included (it is not handed over). Another node's progress is not read.
func TestEveryNodeLoadHandsOverTasksWithProgress(t *testing.T) {
	c := newCluster(t)
	r1 := c.put(t, keys.Every("alice", "t1"), everyTask("t1"))
	p1 := c.put(t, keys.EveryProgress("n1", "t1"), progress(7))
	c.put(t, keys.EveryProgress("n2", "t1"), progress(99))
	c.put(t, keys.EveryProgress("n2", "t2"), progress(99))
	r2 := c.put(t, keys.Every("bob", "t2"), everyTask("t2"))
	c.putString(t, keys.Every("carol", "t3"), "\xff\xff")
	r4 := c.put(t, keys.Every("dave", "t4"), everyTask("t4"))
	p4 := c.putString(t, keys.EveryProgress("n1", "t4"), "\xff\xff")
	c.put(t, keys.AllEvery()+"not-a-task-key", everyTask("t5"))
	e, n := newEveryNode(c)
	within(t, "Load", func() {
		if err := e.Load(ctxFor(t)); err != nil {
			t.Errorf("Load: %v", err)
		}
	})
	wantLines(t, n,
		fmt.Sprintf("put alice/t1 @%d progress 7 @%d", r1, p1),
		fmt.Sprintf("put bob/t2 @%d no progress @0", r2),
		fmt.Sprintf("put dave/t4 @%d no progress @%d", r4, p4),
		"listed t1 t2 t3 t4")
}

// The watch hands over each task stored or changed, without this node's
// progress, and each one deleted; a record that does not decode is not
// handed over.
func TestEveryNodeWatchBringsEachChange(t *testing.T) {
	c := newCluster(t)
	c.put(t, keys.EveryProgress("n1", "t1"), progress(7))
	e, n := newEveryNode(c)
	loadThenRun(t, e)
	r1 := c.put(t, keys.Every("alice", "t1"), everyTask("t1"))
	r2 := c.put(t, keys.Every("alice", "t1"), everyTask("t1"))
	c.putString(t, keys.Every("alice", "t2"), "\xff\xff")
	c.del(t, keys.Every("alice", "t1"))
	tst.Eventually(t, wait, func() bool { return n.count() == 4 }, "the changes")
	wantLines(t, n, "listed ",
		fmt.Sprintf("put alice/t1 @%d", r1),
		fmt.Sprintf("put alice/t1 @%d", r2),
		"deleted alice/t1")
}

// The task whose event breaks the watch (the fault swallows the event) is
// handed over by the list that follows, with this node's progress, and
// the ids listed; the watch resumed after it brings the delete.
func TestEveryNodeBrokenWatchListsAgain(t *testing.T) {
	c := newCluster(t)
	brk := c.faults.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: keys.Every("alice", "t1"), Times: 1,
		Action: etcdfault.BreakWatch()})
	e, n := newEveryNode(c)
	loadThenRun(t, e)
	p1 := c.put(t, keys.EveryProgress("n1", "t1"), progress(3))
	r1 := c.put(t, keys.Every("alice", "t1"), everyTask("t1"))
	tst.Eventually(t, wait, func() bool { return n.count() == 3 }, "the list after the break")
	if brk.Hits() != 1 {
		t.Fatalf("the watch was broken %d times; want once", brk.Hits())
	}
	c.del(t, keys.Every("alice", "t1"))
	tst.Eventually(t, wait, func() bool { return n.count() == 4 }, "the delete, from the new watch")
	wantLines(t, n, "listed ",
		fmt.Sprintf("put alice/t1 @%d progress 3 @%d", r1, p1),
		"listed t1",
		"deleted alice/t1")
}

// Run without a Load lists first; a list that fails is retried.
func TestEveryNodeRunListsFirstAndRetries(t *testing.T) {
	c := newCluster(t)
	r1 := c.put(t, keys.Every("alice", "t1"), everyTask("t1"))
	fail := c.faults.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Prefix: keys.AllEvery(), Times: 2, Action: etcdfault.Fail(nil)})
	e, n := newEveryNode(c)
	run(t, e.Run)
	tst.Eventually(t, wait, func() bool { return n.count() == 2 }, "the task, listed by Run")
	wantLines(t, n, fmt.Sprintf("put alice/t1 @%d no progress @0", r1), "listed t1")
	if fail.Hits() != 2 {
		t.Fatalf("%d lists failed; want 2 before the one that succeeded", fail.Hits())
	}
}

// Reload reads one task again with this node's progress: it hands it over
// with the progress, or as deleted when it is gone; a read that fails
// hands nothing over.
func TestEveryNodeReload(t *testing.T) {
	c := newCluster(t)
	r1 := c.put(t, keys.Every("alice", "t1"), everyTask("t1"))
	p1 := c.put(t, keys.EveryProgress("n1", "t1"), progress(5))
	r2 := c.put(t, keys.Every("alice", "t2"), everyTask("t2"))
	e, n := newEveryNode(c)
	within(t, "Reload", func() {
		e.Reload(ctxFor(t), "alice", "t1")
		e.Reload(ctxFor(t), "alice", "t2")
		e.Reload(ctxFor(t), "alice", "gone")
	})
	fail := c.faults.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Prefix: keys.Every("alice", "t1"), Times: 1, Action: etcdfault.Fail(nil)})
	e.Reload(ctxFor(t), "alice", "t1")
	if fail.Hits() != 1 {
		t.Fatalf("the failing read was made %d times; want once", fail.Hits())
	}
	wantLines(t, n,
		fmt.Sprintf("put alice/t1 @%d progress 5 @%d", r1, p1),
		fmt.Sprintf("put alice/t2 @%d no progress @0", r2),
		"deleted alice/gone")
}

// Learn hands over a task this node wrote, as the watch would (without
// progress); a value that does not decode is not handed over.
func TestEveryNodeLearn(t *testing.T) {
	c := newCluster(t)
	e, n := newEveryNode(c)
	b, err := proto.Marshal(everyTask("t1"))
	if err != nil {
		t.Fatal(err)
	}
	e.Learn("alice", b, 42)
	e.Learn("alice", []byte("\xff\xff"), 43)
	wantLines(t, n, "put alice/t1 @42")
}

package writepath

import (
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The operations the shapes are made of: a task's record, its history
// entries, its deletes and its calendar references, and a handoff entry.

// PutTask is the operation that writes rec.
func (s Shapes) PutTask(rec *storev1.TaskRecord) (clientv3.Op, error) {
	b, err := pending.Encode(rec)
	if err != nil {
		return clientv3.Op{}, err
	}
	return clientv3.OpPut(s.keys.Task(rec.Spec.GetIdentity(), rec.Id), string(b)), nil
}

// HistoryOps appends run to rec's history: it advances rec.HistorySeq, so the
// caller must write rec in the same Txn, and drops the entry that falls out
// of the last keep.
func (s Shapes) HistoryOps(rec *storev1.TaskRecord, run *taskdv1.Run, keep int) ([]clientv3.Op, error) {
	rec.HistorySeq++
	b, err := proto.Marshal(&storev1.RunRecord{Run: run})
	if err != nil {
		return nil, fmt.Errorf("encode run %d of task %s: %w", run.RunNumber, rec.Id, err)
	}
	id := rec.Spec.GetIdentity()
	ops := []clientv3.Op{clientv3.OpPut(s.keys.Run(id, rec.Id, rec.HistorySeq), string(b))}
	if old := rec.HistorySeq - int64(keep); old > 0 {
		ops = append(ops, clientv3.OpDelete(s.keys.Run(id, rec.Id, old)))
	}
	return ops, nil
}

// DeleteTaskOps remove a task, its history, a forwarded result left for it,
// its idempotency key and its references to calendars.
func (s Shapes) DeleteTaskOps(rec *storev1.TaskRecord) []clientv3.Op {
	id := rec.Spec.GetIdentity()
	ops := []clientv3.Op{
		clientv3.OpDelete(s.keys.Task(id, rec.Id)),
		clientv3.OpDelete(s.keys.Runs(id, rec.Id), clientv3.WithPrefix()),
		clientv3.OpDelete(s.keys.Result(id, rec.Id)),
	}
	if key := rec.Spec.GetIdempotencyKey(); key != "" {
		ops = append(ops, clientv3.OpDelete(s.keys.Idem(id, key)))
	}
	return append(ops, s.CalendarRefOps(rec, rec.Spec.GetCalendars(), true)...)
}

// EveryHistoryOps appends run to node's history of an EVERY_NODE task,
// advancing prog.HistorySeq (write prog in the same Txn).
func (s Shapes) EveryHistoryOps(taskID, node string, prog *storev1.EveryNodeProgress, run *taskdv1.Run, keep int) ([]clientv3.Op, error) {
	prog.HistorySeq++
	b, err := proto.Marshal(&storev1.RunRecord{Run: run})
	if err != nil {
		return nil, fmt.Errorf("encode run %d of task %s: %w", run.RunNumber, taskID, err)
	}
	ops := []clientv3.Op{clientv3.OpPut(s.keys.EveryRun(taskID, node, prog.HistorySeq), string(b))}
	if old := prog.HistorySeq - int64(keep); old > 0 {
		ops = append(ops, clientv3.OpDelete(s.keys.EveryRun(taskID, node, old)))
	}
	return ops, nil
}

// DeleteEveryOps remove an EVERY_NODE task, every node's history of it, the
// progress on it of each of nodes, its idempotency key and its references
// to calendars. A node left out of nodes drops its own progress when it
// sees the task go.
func (s Shapes) DeleteEveryOps(rec *storev1.TaskRecord, nodes []string) []clientv3.Op {
	id := rec.Spec.GetIdentity()
	ops := []clientv3.Op{
		clientv3.OpDelete(s.keys.Every(id, rec.Id)),
		clientv3.OpDelete(s.keys.EveryRuns(rec.Id), clientv3.WithPrefix()),
	}
	if key := rec.Spec.GetIdempotencyKey(); key != "" {
		ops = append(ops, clientv3.OpDelete(s.keys.Idem(id, key)))
	}
	ops = append(ops, s.CalendarRefOps(rec, rec.Spec.GetCalendars(), true)...)
	for _, node := range nodes {
		ops = append(ops, clientv3.OpDelete(s.keys.EveryProgress(node, rec.Id)))
	}
	return ops
}

// CalendarRefOps are the puts (or, with del, deletes) of a task's
// references to the calendars it lists.
func (s Shapes) CalendarRefOps(rec *storev1.TaskRecord, names []string, del bool) []clientv3.Op {
	ops := make([]clientv3.Op, 0, len(names))
	for _, c := range names {
		key := s.keys.CalendarTaskRef(c, rec.Spec.GetIdentity(), rec.Id)
		if del {
			ops = append(ops, clientv3.OpDelete(key))
		} else {
			ops = append(ops, clientv3.OpPut(key, ""))
		}
	}
	return ops
}

// PutHandoff is the operation that hands a task of id (taskID "*": all of
// them) over to node, from node from.
func PutHandoff(k keyspace.Keys, node, from, id, taskID string) (clientv3.Op, error) {
	b, err := proto.Marshal(&storev1.HandoffEntry{Identity: id, From: from, TaskId: taskID})
	if err != nil {
		return clientv3.Op{}, fmt.Errorf("encode handoff entry: %w", err)
	}
	return clientv3.OpPut(k.Entry(node, id, taskID), string(b)), nil
}

package writepath

import (
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The shapes of a run's writes: its start (the run marker), its commit (the
// result and its history entry), and an overlapping run's start.

// Start writes rec, which holds a run's marker, for an owned identity. It
// holds only while the identity has f's epoch, the task f's revision, this
// node's registration lease l, and neither the identity nor the kind is
// paused. Its Refusal reads Mapping, Task, Registration, PauseIdentity and
// PauseKind.
func (s Shapes) Start(f RunFence, l Lease, p Pauses, rec *storev1.TaskRecord) (Txn, error) {
	put, err := s.PutTask(rec)
	if err != nil {
		return Txn{}, err
	}
	return Txn{
		If:    append(append(s.runFence(f), s.Registered(l)), s.pauseFence(p)...),
		Then:  []clientv3.Op{put},
		Else:  append(append(s.runElse(f), clientv3.OpGet(s.reg)), s.pauseElse(p)...),
		reads: []read{readMapping, readTask, readRegistration, readPauseIdentity, readPauseKind},
	}, nil
}

// EveryStart writes this node's progress on an EVERY_NODE task, which holds
// a run's marker, fenced by f and the pauses p. Its Refusal reads
// PauseIdentity and PauseKind.
func (s Shapes) EveryStart(f EveryFence, p Pauses, prog *storev1.EveryNodeProgress) (Txn, error) {
	put, err := s.putProgress(f.Task, prog)
	if err != nil {
		return Txn{}, err
	}
	return Txn{
		If:    append(s.everyFence(f), s.pauseFence(p)...),
		Then:  []clientv3.Op{put},
		Else:  s.pauseElse(p),
		reads: []read{readPauseIdentity, readPauseKind},
	}, nil
}

// Overlap starts an overlapping run: it writes the parent's record, and the
// child's when there is one, fenced as Start is. Its Refusal reads Mapping
// and Task.
func (s Shapes) Overlap(f RunFence, l Lease, p Pauses, parent, child *storev1.TaskRecord) (Txn, error) {
	put, err := s.PutTask(parent)
	if err != nil {
		return Txn{}, err
	}
	ops := []clientv3.Op{put}
	if child != nil {
		cput, err := s.PutTask(child)
		if err != nil {
			return Txn{}, fmt.Errorf("an overlapping run: %w", err)
		}
		ops = append(ops, cput)
	}
	return Txn{
		If:    append(append(s.runFence(f), s.Registered(l)), s.pauseFence(p)...),
		Then:  ops,
		Else:  s.runElse(f),
		reads: []read{readMapping, readTask},
	}, nil
}

// Commit writes rec, a run's result folded in, with the history entry hist
// (nil: none, for an armed run undone) of which the last keep are kept. It
// holds only while f does. Its Refusal reads Mapping and Task.
func (s Shapes) Commit(f RunFence, rec *storev1.TaskRecord, hist *taskdv1.Run, keep int) (Txn, error) {
	var ops []clientv3.Op
	if hist != nil {
		var err error
		if ops, err = s.HistoryOps(rec, hist, keep); err != nil {
			return Txn{}, err
		}
	}
	put, err := s.PutTask(rec)
	if err != nil {
		return Txn{}, err
	}
	return Txn{
		If:    s.runFence(f),
		Then:  append([]clientv3.Op{put}, ops...),
		Else:  s.runElse(f),
		reads: []read{readMapping, readTask},
	}, nil
}

// EveryCommit writes this node's progress on an EVERY_NODE task, a run's
// result folded in, with its history entry hist, fenced by f. Its Refusal
// reads Shared.
func (s Shapes) EveryCommit(f EveryFence, prog *storev1.EveryNodeProgress, hist *taskdv1.Run, keep int) (Txn, error) {
	ops, err := s.EveryHistoryOps(f.Task, s.node, prog, hist, keep)
	if err != nil {
		return Txn{}, err
	}
	put, err := s.putProgress(f.Task, prog)
	if err != nil {
		return Txn{}, err
	}
	return Txn{
		If:    s.everyFence(f),
		Then:  append([]clientv3.Op{put}, ops...),
		Else:  []clientv3.Op{clientv3.OpGet(s.keys.Every(f.Identity, f.Task))},
		reads: []read{readShared},
	}, nil
}

func (s Shapes) putProgress(task string, p *storev1.EveryNodeProgress) (clientv3.Op, error) {
	b, err := proto.Marshal(p)
	if err != nil {
		return clientv3.Op{}, fmt.Errorf("encode progress: %w", err)
	}
	return clientv3.OpPut(s.keys.EveryProgress(s.node, task), string(b)), nil
}

// DeletingForwarded is commit (a Commit's Txn) that also deletes the
// result forwarded for the task, if any: the settling of a run marker
// whose result came from the identity's previous owner, or never came.
func (s Shapes) DeletingForwarded(commit Txn, id, task string) Txn {
	commit.Then = append(commit.Then[:len(commit.Then):len(commit.Then)], clientv3.OpDelete(s.keys.Result(id, task)))
	return commit
}

// Forward writes the result fr of a run that ended here after its identity
// moved away, for the identity's owner to commit, with extra (the owner's
// handoff entry, so that it looks at once). It holds only while the task
// is at rev, that is while the run's marker still stands.
func (s Shapes) Forward(id, task string, rev int64, fr *storev1.ForwardedResult, extra ...clientv3.Op) (Txn, error) {
	b, err := proto.Marshal(fr)
	if err != nil {
		return Txn{}, fmt.Errorf("encode forwarded result: %w", err)
	}
	return Txn{
		If:   []clientv3.Cmp{s.TaskAt(id, task, rev)},
		Then: append([]clientv3.Op{clientv3.OpPut(s.keys.Result(id, task), string(b))}, extra...),
	}, nil
}

// ArmedCheck is what an armed run's start compared when it was written
// ahead of its fire time.
type ArmedCheck struct {
	Lease   Lease
	Epoch   int64
	Kind    string
	Task    string
	TaskRev int64
}

// Confirm is the check, at their fire time, of the armed runs of identity
// id: compares only, each distinct lease, epoch and kind once, that this
// node's registration holds each run's lease, the identity each run's
// epoch, each task its revision, and that neither the identity nor a run's
// kind is paused. It writes nothing.
func (s Shapes) Confirm(id string, runs []ArmedCheck) Txn {
	cmps := []clientv3.Cmp{s.NotPaused(s.keys.PauseIdentity(id))}
	seenLease, seenEpoch, seenKind := map[Lease]bool{}, map[int64]bool{}, map[string]bool{}
	for _, a := range runs {
		if !seenLease[a.Lease] {
			seenLease[a.Lease] = true
			cmps = append(cmps, s.Registered(a.Lease))
		}
		if !seenEpoch[a.Epoch] {
			seenEpoch[a.Epoch] = true
			cmps = append(cmps, s.Epoch(id, a.Epoch))
		}
		if !seenKind[a.Kind] {
			seenKind[a.Kind] = true
			cmps = append(cmps, s.NotPaused(s.keys.PauseKind(a.Kind)))
		}
		cmps = append(cmps, s.TaskAt(id, a.Task, a.TaskRev))
	}
	return Txn{If: cmps}
}

// Purge deletes a finished task at the end of its retention, with its
// history, forwarded result, idempotency key and calendar references. It
// holds only while f does; its Refusal reads Mapping and Task.
func (s Shapes) Purge(f RunFence, rec *storev1.TaskRecord) Txn {
	return Txn{If: s.runFence(f), Then: s.DeleteTaskOps(rec), Else: s.runElse(f), reads: []read{readMapping, readTask}}
}

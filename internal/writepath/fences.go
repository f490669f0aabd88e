package writepath

import (
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The fences: the values a write carries to prove that its writer may
// still write (Temporal's range id, threaded through every write). Each
// becomes compares here, in one place, so that every shape compares them
// alike.

// RunFence is what a write of an owned identity's task proves: the identity
// still has the epoch the node owns it under (its mapping's mod revision),
// and the task is at the revision the node last wrote or read.
type RunFence struct {
	Identity, Task string
	Epoch, TaskRev int64
}

// Lease is the lease of this node's registration: a start compares its
// registration still under it, so that a node whose registration is gone,
// or was renewed under a new lease, starts nothing planned under the old
// one, whatever its own clock says (etcd can end a lease sooner than the
// last acknowledged renewal promised).
type Lease clientv3.LeaseID

// Pauses is the identity and kind whose pauses a start compares absent.
type Pauses struct{ Identity, Kind string }

// EveryFence is what a write of this node's progress on an EVERY_NODE task
// proves: the node's registration is under Lease, the shared record is at
// SharedRev, and this node's progress at ProgressRev.
type EveryFence struct {
	Identity, Task         string
	SharedRev, ProgressRev int64
	Lease                  Lease
}

func (s Shapes) runFence(f RunFence) []clientv3.Cmp {
	return []clientv3.Cmp{s.Epoch(f.Identity, f.Epoch), s.TaskAt(f.Identity, f.Task, f.TaskRev)}
}

// runElse reads, when a RunFence fails, what failed it: the mapping, then
// the task.
func (s Shapes) runElse(f RunFence) []clientv3.Op {
	return []clientv3.Op{clientv3.OpGet(s.keys.Mapping(f.Identity)), clientv3.OpGet(s.keys.Task(f.Identity, f.Task))}
}

// Epoch is the compare that holds only while id is still mapped with epoch.
func (s Shapes) Epoch(id string, epoch int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(s.keys.Mapping(id)), "=", epoch)
}

// TaskAt is the compare that holds only while the task is at rev (0:
// while it does not exist). A task's mod revision changes on every write
// of its record, so a commit that carries it fails if anyone (a cancel, a
// RunTaskNow, another node) wrote the task since the caller read it.
func (s Shapes) TaskAt(id, task string, rev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(s.keys.Task(id, task)), "=", rev)
}

// Registered is the compare that holds only while the node's registration
// is under lease l.
func (s Shapes) Registered(l Lease) clientv3.Cmp {
	return clientv3.Compare(clientv3.LeaseValue(s.reg), "=", int64(l))
}

func (s Shapes) pauseFence(p Pauses) []clientv3.Cmp {
	return []clientv3.Cmp{s.NotPaused(s.keys.PauseIdentity(p.Identity)), s.NotPaused(s.keys.PauseKind(p.Kind))}
}

// NotPaused is the compare that holds only while the pause key is absent.
func (s Shapes) NotPaused(key string) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
}

func (s Shapes) pauseElse(p Pauses) []clientv3.Op {
	return []clientv3.Op{clientv3.OpGet(s.keys.PauseIdentity(p.Identity)), clientv3.OpGet(s.keys.PauseKind(p.Kind))}
}

func (s Shapes) everyFence(f EveryFence) []clientv3.Cmp {
	return []clientv3.Cmp{
		s.Registered(f.Lease),
		clientv3.Compare(clientv3.ModRevision(s.keys.Every(f.Identity, f.Task)), "=", f.SharedRev),
		clientv3.Compare(clientv3.ModRevision(s.keys.EveryProgress(s.node, f.Task)), "=", f.ProgressRev),
	}
}

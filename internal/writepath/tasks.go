package writepath

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// The shapes of a client's change of a stored task, made by whichever node
// took the call: an update (UpdateTask, trigger edits) and a delete. Each
// holds only while the task is at the revision read, and, for a task of
// scope IDENTITY, while the identity has the owner read (OwnerFence), to
// whom a handoff entry tells of the change: a move in between cannot leave
// the change with a node that no longer looks.

// OwnerFence is the owner of identity Identity that a change of one of its
// tasks was read with: mapped at Epoch, or unmapped. HandTo, if set, is
// the owner to hand the change to (another node, or an earlier
// incarnation of this one).
type OwnerFence struct {
	Identity string
	Mapped   bool
	Epoch    int64
	HandTo   string
}

func (s Shapes) owner(o *OwnerFence, task string) ([]clientv3.Cmp, []clientv3.Op, error) {
	if o == nil { // EVERY_NODE: every node sees the change through its watch
		return nil, nil, nil
	}
	cmp := s.Unmapped(o.Identity)
	if o.Mapped {
		cmp = s.Epoch(o.Identity, o.Epoch)
	}
	if o.HandTo == "" {
		return []clientv3.Cmp{cmp}, nil, nil
	}
	op, err := s.Handoff(o.HandTo, o.Identity, task)
	if err != nil {
		return nil, nil, err
	}
	return []clientv3.Cmp{cmp}, []clientv3.Op{op}, nil
}

// UpdateTask rewrites rec, stored at key (revision rev), with its calendar
// references following its list (added, compared present; removed); o nil
// for an EVERY_NODE task. It returns the encoded record too.
func (s Shapes) UpdateTask(key string, rev int64, rec *storev1.TaskRecord, added, removed []string, o *OwnerFence) (Txn, []byte, error) {
	b, err := pending.Encode(rec)
	if err != nil {
		return Txn{}, nil, err
	}
	ops := []clientv3.Op{clientv3.OpPut(key, string(b))}
	ops = append(ops, s.CalendarRefOps(rec, added, false)...)
	ops = append(ops, s.CalendarRefOps(rec, removed, true)...)
	cmps := append([]clientv3.Cmp{At(key, rev)}, s.CalendarsExist(added)...)
	oc, oo, err := s.owner(o, rec.Id)
	if err != nil {
		return Txn{}, nil, err
	}
	return Txn{If: append(cmps, oc...), Then: append(ops, oo...)}, b, nil
}

// DeleteTask deletes the task stored at key (revision rev) with deletes
// (DeleteTaskOps, or an EVERY_NODE task's); o nil for an EVERY_NODE task.
func (s Shapes) DeleteTask(key string, rev int64, task string, deletes []clientv3.Op, o *OwnerFence) (Txn, error) {
	oc, oo, err := s.owner(o, task)
	if err != nil {
		return Txn{}, err
	}
	return Txn{If: append([]clientv3.Cmp{At(key, rev)}, oc...), Then: append(append([]clientv3.Op(nil), deletes...), oo...)}, nil
}

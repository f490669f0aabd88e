package writepath

import (
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The shapes of the writes every node follows rather than owns: the
// calendars and their references, the pauses, an identity's status votes
// and its unmapping when idle, and a node's drain request.

// StoreCalendar writes calendar c (a new one, or a replacement of the one
// stored at rev with base oldBase) and its reference to its base. It holds
// only while the calendar is at rev (0: absent) and its base, if it has
// one, at baseRev: a calendar of the chain that changed since the caller
// compiled it fails the write. A replacement that leaves its old base
// deletes its reference to it.
func (s Shapes) StoreCalendar(c *taskdv1.Calendar, rev, baseRev int64, oldBase string) (Txn, error) {
	b, err := proto.Marshal(c)
	if err != nil {
		return Txn{}, err
	}
	key := s.keys.Calendar(c.Name)
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)}
	ops := []clientv3.Op{clientv3.OpPut(key, string(b))}
	if c.Base != "" {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(s.keys.Calendar(c.Base)), "=", baseRev))
		ops = append(ops, clientv3.OpPut(s.keys.CalendarBaseRef(c.Base, c.Name), ""))
	}
	if oldBase != "" && oldBase != c.Base {
		ops = append(ops, clientv3.OpDelete(s.keys.CalendarBaseRef(oldBase, c.Name)))
	}
	return Txn{If: cmps, Then: ops}, nil
}

// DeleteCalendar deletes calendar name. It holds only while the calendar
// exists and has no user (no key under its users: a task, a non-durable
// task or a calendar based on it). Its Then reads the calendar before
// deleting it (DeletedCalendar); its Refusal reads Calendar and
// CalendarUser (one user, keys only).
func (s Shapes) DeleteCalendar(name string) Txn {
	key, users := s.keys.Calendar(name), s.keys.CalendarUsers(name)
	return Txn{
		If: []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(key), ">", 0),
			clientv3.Compare(clientv3.CreateRevision(users), "=", 0).WithPrefix(),
		},
		Then:  []clientv3.Op{clientv3.OpGet(key), clientv3.OpDelete(key)},
		Else:  []clientv3.Op{clientv3.OpGet(key), clientv3.OpGet(users, clientv3.WithPrefix(), clientv3.WithLimit(1), clientv3.WithKeysOnly())},
		reads: []read{readCalendar, readCalendarUser},
	}
}

// DeletedCalendar is the calendar as a DeleteCalendar Txn that succeeded
// read it before deleting it.
func DeletedCalendar(resp *clientv3.TxnResponse) *clientv3.GetResponse {
	return (*clientv3.GetResponse)(resp.Responses[0].GetResponseRange())
}

// LocalRefs writes the references of rec, a non-durable task held by this
// node, to the calendars names, under the node's lease l (so that they end
// with the node). It holds only while each calendar exists.
func (s Shapes) LocalRefs(rec *storev1.TaskRecord, names []string, l Lease) Txn {
	return Txn{If: s.CalendarsExist(names), Then: s.LocalRefPuts(rec, names, l)}
}

// DropLocalRefs deletes the references of rec, a non-durable task held by
// this node, to the calendars names. It compares nothing.
func (s Shapes) DropLocalRefs(rec *storev1.TaskRecord, names []string) Txn {
	ops := make([]clientv3.Op, 0, len(names))
	for _, name := range names {
		ops = append(ops, clientv3.OpDelete(s.localRef(rec, name)))
	}
	return Txn{Then: ops}
}

// LocalRefPuts are the puts of the references of rec, a non-durable task
// held by this node, to the calendars names, under lease l: what
// RestoreLocalRefs writes for each task.
func (s Shapes) LocalRefPuts(rec *storev1.TaskRecord, names []string, l Lease) []clientv3.Op {
	ops := make([]clientv3.Op, 0, len(names))
	for _, name := range names {
		ops = append(ops, clientv3.OpPut(s.localRef(rec, name), "", clientv3.WithLease(clientv3.LeaseID(l))))
	}
	return ops
}

func (s Shapes) localRef(rec *storev1.TaskRecord, name string) string {
	return s.keys.CalendarLocalRef(name, s.node, rec.GetSpec().GetIdentity(), rec.GetId())
}

// RestoreLocalRefs writes puts (the LocalRefPuts of every non-durable task
// held here, under the node's new lease), in Txns of at most maxOps
// operations each, sent one after the other. They compare nothing.
func (s Shapes) RestoreLocalRefs(puts []clientv3.Op, maxOps int) []Txn {
	var txns []Txn
	for len(puts) > 0 {
		chunk := puts[:min(len(puts), maxOps)]
		puts = puts[len(chunk):]
		txns = append(txns, Txn{Then: chunk})
	}
	return txns
}

// Pause writes pause p: of kind p.Kind if it names one, else of identity
// p.Identity. It holds only while that pause is absent; its Refusal reads
// the pause in force, as PauseKind or PauseIdentity (the one it writes).
func (s Shapes) Pause(p *taskdv1.Pause) (Txn, error) {
	b, err := proto.Marshal(p)
	if err != nil {
		return Txn{}, err
	}
	key, what := s.keys.PauseIdentity(p.Identity), readPauseIdentity
	if p.Kind != "" {
		key, what = s.keys.PauseKind(p.Kind), readPauseKind
	}
	return Txn{
		If:    []clientv3.Cmp{s.NotPaused(key)},
		Then:  []clientv3.Op{clientv3.OpPut(key, string(b))},
		Else:  []clientv3.Op{clientv3.OpGet(key)},
		reads: []read{what},
	}, nil
}

// Vote writes st, this node's active/inactive vote on identity id, which
// it owns under epoch. It holds only while the identity has that epoch:
// only the owner's vote is recorded.
func (s Shapes) Vote(id string, epoch int64, st *storev1.Status) (Txn, error) {
	b, err := proto.Marshal(st)
	if err != nil {
		return Txn{}, err
	}
	return Txn{If: []clientv3.Cmp{s.Epoch(id, epoch)}, Then: []clientv3.Op{clientv3.OpPut(s.keys.Status(id), string(b))}}, nil
}

// UnmapIdle removes identity id, which this node owns under epoch and
// which stayed inactive: its mapping, its entry in this node's index and
// its status. It holds only while the identity has that epoch and no task
// at all is stored under it.
func (s Shapes) UnmapIdle(id string, epoch int64) Txn {
	return Txn{
		If: []clientv3.Cmp{s.Epoch(id, epoch), clientv3.Compare(clientv3.CreateRevision(s.keys.Tasks(id)), "=", 0).WithPrefix()},
		Then: []clientv3.Op{
			clientv3.OpDelete(s.keys.Mapping(id)), clientv3.OpDelete(s.keys.Owned(s.node, id)),
			clientv3.OpDelete(s.keys.Status(id)),
		},
	}
}

// TakeDrainRequest removes this node's drain request, read at rev. It
// holds only while the request is at rev: a newer request stays.
func (s Shapes) TakeDrainRequest(rev int64) Txn {
	key := s.keys.DrainRequest(s.node)
	return Txn{If: []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)}, Then: []clientv3.Op{clientv3.OpDelete(key)}}
}

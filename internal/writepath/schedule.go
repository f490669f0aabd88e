package writepath

import (
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// Schedule builds the one Txn that stores a batch of new tasks of several
// identities: each identity fenced on the epoch of the owner the node
// believes it has (Owned), or mapped in the same Txn if it has none
// (Map), each task stored with its idempotency key (compared absent) and
// its calendar references (each calendar compared present). Tasks of an
// identity another node owns carry that node's handoff entries (Also).
// Nothing is written unless every compare holds.
type Schedule struct {
	s   Shapes
	txn Txn
}

// Schedule starts an empty schedule Txn.
func (s Shapes) Schedule() *Schedule { return &Schedule{s: s} }

// Owned fences the batch on identity id still having epoch.
func (b *Schedule) Owned(id string, epoch int64) { b.txn.If = append(b.txn.If, b.s.Epoch(id, epoch)) }

// Map maps the unmapped identity id to node (incarnation inc) in the Txn;
// target is the compare that the node is still registered under the lease
// it was chosen with (Target), added once per batch by the caller.
func (b *Schedule) Map(id, node, inc string) {
	b.txn.If = append(b.txn.If, b.s.Unmapped(id))
	b.txn.Then = append(b.txn.Then, b.s.Assign(id, "", node, inc)...)
}

// Target fences the batch on node still being registered under lease
// (the node its unmapped identities are mapped to).
func (b *Schedule) Target(node string, lease int64) {
	b.txn.If = append(b.txn.If, b.s.RegisteredAs(node, lease))
}

// Task stores rec, a task of scope IDENTITY.
func (b *Schedule) Task(rec *storev1.TaskRecord) error {
	put, err := b.s.PutTask(rec)
	if err != nil {
		return err
	}
	b.txn.Then = append(b.txn.Then, put)
	b.extras(rec)
	return nil
}

// EveryTask stores rec, a task of scope EVERY_NODE (stored once).
func (b *Schedule) EveryTask(rec *storev1.TaskRecord) error {
	v, err := pending.Encode(rec)
	if err != nil {
		return err
	}
	b.txn.Then = append(b.txn.Then, clientv3.OpPut(b.s.keys.Every(rec.Spec.GetIdentity(), rec.Id), string(v)))
	b.extras(rec)
	return nil
}

// extras are a new task's idempotency key and calendar references.
func (b *Schedule) extras(rec *storev1.TaskRecord) {
	if k := rec.Spec.IdempotencyKey; k != "" {
		ik := b.s.keys.Idem(rec.Spec.GetIdentity(), k)
		b.txn.If = append(b.txn.If, clientv3.Compare(clientv3.CreateRevision(ik), "=", 0))
		b.txn.Then = append(b.txn.Then, clientv3.OpPut(ik, rec.Id))
	}
	b.txn.If = append(b.txn.If, b.s.CalendarsExist(rec.Spec.Calendars)...)
	b.txn.Then = append(b.txn.Then, b.s.CalendarRefOps(rec, rec.Spec.Calendars, false)...)
}

// Also adds ops (handoff entries) to the Txn.
func (b *Schedule) Also(ops ...clientv3.Op) { b.txn.Then = append(b.txn.Then, ops...) }

// Empty reports whether the Txn writes nothing.
func (b *Schedule) Empty() bool { return len(b.txn.Then) == 0 }

// Txn is the schedule's Txn.
func (b *Schedule) Txn() Txn { return b.txn }

// Unmapped is the compare that holds only while id has no mapping.
func (s Shapes) Unmapped(id string) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(s.keys.Mapping(id)), "=", 0)
}

// RegisteredAs is the compare that holds only while node's registration is
// under lease.
func (s Shapes) RegisteredAs(node string, lease int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.LeaseValue(s.keys.Node(node)), "=", lease)
}

// CalendarsExist are the compares that each of the calendars names exists.
func (s Shapes) CalendarsExist(names []string) []clientv3.Cmp {
	cmps := make([]clientv3.Cmp, 0, len(names))
	for _, name := range names {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(s.keys.Calendar(name)), ">", 0))
	}
	return cmps
}

// Assign is the operations that map id to node (incarnation inc), taking
// it out of fromNode's index of owned identities: the mapping, whose mod
// revision becomes the identity's epoch, and the index entries.
func (s Shapes) Assign(id, fromNode, node, inc string) []clientv3.Op {
	val, _ := proto.Marshal(&storev1.Mapping{Node: node, Incarnation: inc})
	ops := []clientv3.Op{clientv3.OpPut(s.keys.Mapping(id), string(val))}
	if fromNode != "" && fromNode != node {
		ops = append(ops, clientv3.OpDelete(s.keys.Owned(fromNode, id)))
	}
	return append(ops, clientv3.OpPut(s.keys.Owned(node, id), ""))
}

package writepath

import (
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The shapes of the node's registration: the record the cluster sees it
// by, written under its lease.

// Register writes this node's record under lease l, replacing the
// registration read at rev (0: none). It holds only while the registration
// is still at rev: another process that wrote it meanwhile fails the
// write.
func (s Shapes) Register(rev int64, l Lease, record []byte) Txn {
	return Txn{
		If:   []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.reg), "=", rev)},
		Then: []clientv3.Op{clientv3.OpPut(s.reg, string(record), clientv3.WithLease(clientv3.LeaseID(l)))},
	}
}

// Publish rewrites this node's record (its state changed) under lease l.
// It holds only while the registration is still under l.
func (s Shapes) Publish(l Lease, record []byte) Txn {
	return Txn{
		If:   []clientv3.Cmp{s.Registered(l)},
		Then: []clientv3.Op{clientv3.OpPut(s.reg, string(record), clientv3.WithLease(clientv3.LeaseID(l)))},
	}
}

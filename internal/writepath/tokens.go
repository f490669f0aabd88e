package writepath

import clientv3 "go.etcd.io/etcd/client/v3"

// The shapes of the token store (pkg/tokens): a token is created only if
// its id is free, and revoked only as it was read.

// CreateIfAbsent writes value at key only if key does not exist.
func CreateIfAbsent(key, value string) Txn {
	return Txn{If: []clientv3.Cmp{Created(key, 0)}, Then: []clientv3.Op{clientv3.OpPut(key, value)}}
}

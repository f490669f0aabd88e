// Package handoff owns the per-node handoff areas (contract §3): when an
// identity moves, or a task is stored, cancelled or run-now'd for an
// identity that another node owns, an entry is written into that node's
// area in the same Txn, and the node loads what it names. Watcher delivers
// an area's entries: by a watch at once, and by polling as the safety net.
//
//	<prefix>handoff/<node>/<identity>/<task-id or *>   -> storev1.HandoffEntry
package handoff

import (
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/pkg/identity"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// Keys lays out the handoff areas under a cluster prefix.
type Keys struct{ prefix string }

// NewKeys returns the handoff keys under prefix (which ends in '/').
func NewKeys(prefix string) Keys { return Keys{prefix: prefix} }

// Area is the prefix of node's handoff area.
func (k Keys) Area(node string) string { return k.prefix + "handoff/" + node + "/" }

// Entry is the key of the handoff of one task (or, with taskID "*", of all
// of an identity's tasks) to node.
func (k Keys) Entry(node, id, taskID string) string {
	return k.Area(node) + identity.Encode(id) + "/" + taskID
}

// PutOp is the Txn operation that hands a task of id over to node.
func (k Keys) PutOp(node, from, id, taskID string) (clientv3.Op, error) {
	b, err := proto.Marshal(&storev1.HandoffEntry{Identity: id, From: from, TaskId: taskID})
	if err != nil {
		return clientv3.Op{}, fmt.Errorf("encode handoff entry: %w", err)
	}
	return clientv3.OpPut(k.Entry(node, id, taskID), string(b)), nil
}

// Package handoff owns the per-node handoff areas: when a task is stored for
// an identity that another node owns, an entry naming it is written into
// that node's area in the same Txn, and the owner loads the task from there.
//
//	<prefix>handoff/<node>/<identity>/<task-id>   -> storev1.HandoffEntry
//
// This release writes the entries; polling and watching the area (SPEC §3.4)
// arrive with relocation.
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

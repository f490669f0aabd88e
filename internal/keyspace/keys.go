package keyspace

import (
	"fmt"
	"strings"
)

// Keys lays out taskd's keyspace under one cluster prefix (--prefix): every
// key below is prefix + its row of docs/architecture.md's Keyspace table.
type Keys struct{ prefix string }

// New returns the keys under prefix (which ends in '/').
func New(prefix string) Keys { return Keys{prefix: prefix} }

// The keys of the nodes and of placement: registrations, the placement
// leader, the control areas, the identity mappings and their index, the
// status votes and the handoff areas.

// Node is the key of node name's registration: nodes/<name>
// (storev1.NodeRecord, under the node's lease).
func (k Keys) Node(name string) string { return k.prefix + "nodes/" + name }

// Nodes is the prefix of every node's registration: nodes/.
func (k Keys) Nodes() string { return k.prefix + "nodes/" }

// Leader is the key of the placement leader: leader (its name and
// incarnation, under its lease).
func (k Keys) Leader() string { return k.prefix + "leader" }

// Controls is the prefix of every node's control area: control/.
func (k Keys) Controls() string { return k.prefix + "control/" }

// Control is the prefix of node's control area, control/<node>/, where
// the requests made to it land (DrainRequest, RebalanceRequest).
func (k Keys) Control(node string) string { return k.prefix + "control/" + node + "/" }

// DrainRequest is the key of the request that node drain:
// control/<node>/drain (the incarnation it is meant for).
func (k Keys) DrainRequest(node string) string { return k.Control(node) + "drain" }

// RebalanceRequest is the key of the placement leader's rebalancing
// request to node: control/<node>/rebalance (text, under node's lease).
func (k Keys) RebalanceRequest(node string) string { return k.Control(node) + "rebalance" }

// SplitRebalanceRequest returns the node whose rebalancing request key is
// key, a key under Controls; ok is false for any other key.
func (k Keys) SplitRebalanceRequest(key string) (node string, ok bool) {
	node, ok = strings.CutSuffix(strings.TrimPrefix(key, k.Controls()), "/rebalance")
	return node, ok && !strings.Contains(node, "/")
}

// Mapping is the key of an identity's mapping: map/<identity>
// (storev1.Mapping); its mod revision is the identity's epoch.
func (k Keys) Mapping(id string) string { return k.prefix + "map/" + Encode(id) }

// Mappings is the prefix of every identity's mapping: map/.
func (k Keys) Mappings() string { return k.prefix + "map/" }

// SplitMapping parses a mapping key into its identity.
func (k Keys) SplitMapping(key string) (string, error) {
	enc, ok := strings.CutPrefix(key, k.Mappings())
	if !ok {
		return "", fmt.Errorf("key %q is not a mapping key", key)
	}
	return Decode(enc)
}

// Status is the key of an identity's last active/inactive vote:
// status/<identity> (storev1.Status).
func (k Keys) Status(id string) string { return k.prefix + "status/" + Encode(id) }

// Owned is the key of id in node's ownership index: owned/<node>/<identity>
// (empty), written in the same Txn as the mapping.
func (k Keys) Owned(node, id string) string {
	return k.prefix + "owned/" + node + "/" + Encode(id)
}

// OwnedPrefix is the prefix of node's ownership index: owned/<node>/.
func (k Keys) OwnedPrefix(node string) string { return k.prefix + "owned/" + node + "/" }

// AllOwned is the prefix of every node's ownership index: owned/.
func (k Keys) AllOwned() string { return k.prefix + "owned/" }

// Handoffs is the prefix of every node's handoff area: handoff/.
func (k Keys) Handoffs() string { return k.prefix + "handoff/" }

// Area is the prefix of node's handoff area: handoff/<node>/.
func (k Keys) Area(node string) string { return k.prefix + "handoff/" + node + "/" }

// Entries is the prefix of the handoff entries of identity id in node's
// area: handoff/<node>/<identity>/.
func (k Keys) Entries(node, id string) string { return k.Area(node) + Encode(id) + "/" }

// Entry is the key of the handoff of one task (or, with taskID "*", of all
// of an identity's tasks) to node: handoff/<node>/<identity>/<task-id or *>
// (storev1.HandoffEntry).
func (k Keys) Entry(node, id, taskID string) string {
	return k.Area(node) + Encode(id) + "/" + taskID
}

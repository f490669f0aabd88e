// Package handoff owns the per-node handoff areas (contract §3): when an
// identity moves, or a task is stored, cancelled or run-now'd for an
// identity that another node owns, an entry is written into that node's
// area in the same Txn (internal/writepath builds it), and the node loads
// what it names. Watcher delivers an area's entries, decoded: by a watch at
// once, and by polling as the safety net.
//
//	<prefix>handoff/<node>/<identity>/<task-id or *>   -> storev1.HandoffEntry
//
// The keys are internal/keyspace's (Keys.Area, Keys.Entry).
//
// Lock: a Watcher's mutex guards its set of entries being delivered only (a
// leaf: no handler is called while it is held).
package handoff

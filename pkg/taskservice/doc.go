// Package taskservice is a taskd node: it registers in etcd under a lease,
// owns the identities mapped to it, keeps their durable tasks in a timer
// queue, and runs each due fire time through the handler of the task's kind,
// committing every result in one Txn fenced on the identity's epoch and the
// task's revision.
//
// A Node has one life cycle: New, Start, then Stop. An application embeds
// one, registers handlers by kind in its Config, and schedules tasks through
// Node.Schedule or the gRPC API (the TaskService of internal/grpcapi).
//
// Guarantees (contract §2): a durable task, once Schedule returns, survives the
// crash of any nodes; a run's result is committed only while the identity is
// still mapped to this node with the epoch the run started under, otherwise
// the run is DROPPED and the task stays; no run starts before the node is
// RUNNING; a node that cannot renew its lease stops starting runs before the
// lease can expire.
//
// Lock: none of its own. The engine lock (internal/dispatch's
// Dispatcher.mu) guards what the node holds (internal/held: its
// identities, task entries, timer queue and runs in flight) and the
// dispatch state around it (internal/admission's queues too). The locks of the membership, the pauses and calendars followers,
// the repair queue and the lifecycle are leaves taken under it, never the
// other way, and it is never held across an etcd call.
package taskservice

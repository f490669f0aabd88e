// Package workers is the node's side of remote workers: processes, in any
// language, that run tasks for a node over the WorkerService's Work stream
// (proto/taskd/v1/worker.proto).
//
// A Pool is the workers connected to one node. It is the node's Remote
// (taskservice.Config.Remote): for every due run of a kind it has no
// handler of its own for, the node first reserves a free slot of a
// connected worker that serves the kind (Reserve; each worker says how many
// runs it takes at once), before the run takes a run slot or writes its
// start; a run for which no slot is free waits on the node, holding
// nothing, until the Pool signals a freed slot or a new worker (Freed).
// Then, exactly where it would call a local handler, after the same lease
// check and under the same fence, the node hands the run to the reserved
// worker. The Pool waits for its outcome and returns it to the node, which
// commits it fenced on the identity's epoch and the task's revision. The Pool learns from the
// node's events whether that commit happened and tells the worker (WorkAck):
// a worker whose run the node no longer holds (it timed out, the node lost
// its lease and the identity went elsewhere) learns that it was dropped.
//
// Guarantees:
//   - a run goes to at most one worker at a time, and a worker never has
//     more runs than its concurrency;
//   - nothing waits for a worker: what the node sends it goes into a
//     bounded queue that a sender of the stream's own drains;
//   - a run whose worker disconnects, falls silent for three heartbeat
//     intervals, leaves a message unread that long, or lets its queue
//     fill ends as a failed attempt, retried after the task's backoff
//     with a new run number: at-least-once, and visible; the worker is
//     cut off, and picked no more, at once;
//   - a worker's ack says accepted only when the node committed its
//     outcome as reported;
//   - a node serves at most Config.MaxStreams Work streams, and its
//     workers at most taskservice.MaxRemoteKinds distinct kinds;
//   - an outcome for a run the node has given up on (cancelled, timed out,
//     fenced out) is refused, never committed;
//   - a run waiting for a worker of its kind holds no run slot and uses no
//     attempt: its start is written only once a worker's slot is reserved
//     for it; the waiting runs of a kind are handed the freed slots in the
//     order they fell due.
//
// Lock: the Pool's mutex guards its sessions, the kinds they serve and the
// outcomes awaited; each session's sender and stream end have leaf locks of
// their own.
package workers

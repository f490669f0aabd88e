// Package workers is the node's side of remote workers: processes, in any
// language, that run tasks for a node over the WorkerService's Work stream
// (proto/taskd/v1/worker.proto).
//
// A Pool is the workers connected to one node. It is the node's Remote
// handler (taskservice.Config.Remote): the node calls it for every run of a
// kind it has no handler of its own for, exactly where it would call a
// local handler, after the same lease check and under the same fence. The
// Pool hands the run to a connected worker that serves the kind and has a
// free slot (each worker says how many runs it takes at once), waits for
// its outcome, and returns it to the node, which commits it fenced on the
// identity's epoch and the task's revision. The Pool learns from the
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
//   - a run waits for a worker of its kind up to the task's timeout, then
//     fails as an attempt.
package workers

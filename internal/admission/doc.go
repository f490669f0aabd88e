// Package admission is what a node's due run waits for before it starts,
// besides a run slot: its kind's concurrency limit (Limits: tokens handed
// out in turn across identities), a remote worker with a free slot
// (Workers: a queue per kind in due order, and the slot reserved for a run
// until its start), and the episodes of kinds that nothing serves (logged
// once as each begins and once as it ends, and the waiting reason GetTask
// shows). pkg/taskservice keeps the glue: which runs need a token or a
// worker, moving an admitted run onto its identity's start queue, the loop
// that waits for freed worker slots, and Stats.
//
// It knows the node's entries and identities only as type parameters (E,
// I): the node keeps the handles it is given (a *Limit as the token an
// entry holds, a *WorkerHold in the entry's out-of-line fields), so that a
// run admitted costs no allocation of its own.
//
// Lock: none of its own. Every type here is guarded by the caller's
// engine lock (internal/dispatch's), held across every call. Under it, this
// package calls only the Remote's Reserve and Kinds and a reservation's
// Release, which take the Remote's own lock under the engine lock (as the
// node always has), the callbacks the caller passes in, and the logger.
package admission

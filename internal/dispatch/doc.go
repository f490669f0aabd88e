// Package dispatch is the node's engine: what it holds (the identities it
// owns, its EVERY_NODE and non-durable tasks, the model in internal/held)
// and how a due task gets to its run. The dispatch loop pops the timer
// queue in due order (dispatch.go) and hands each entry to its identity's
// starter, which takes a run slot (at most 3/4 of them to one identity)
// and the admission it needs (a token of its kind's limit, a remote
// worker's slot: limits.go, workerwait.go, unserved.go) before the run path
// writes its start. Entries due within the look-ahead are armed ahead
// (arming.go); far-off ones go cold and are read again before they are due
// (thaw.go); a paused one is parked (pauses.go). It also keeps the registry
// of runs in flight (flights.go), counts each identity's active-status vote
// (votecount.go) and installs the tasks of an identity taken over
// (identities.go, takeover.go).
//
// What a run does once it starts (its start write, its handler's call, its
// commit) is pkg/taskservice's, behind Runner; the writes go through
// internal/writepath.
//
// Lock: one, the Dispatcher's mu (Lock, Unlock): the node's engine lock.
// It guards the Dispatcher's fields and every internal/held value; the
// leaves (membership, the followers, admission) are taken under it, never
// the other way, and no etcd call is made while it is held.
package dispatch

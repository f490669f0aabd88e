package dispatch

// This file is the node's side of the episodes of kinds that nothing on
// this node serves: no handler of its own and no connected remote worker
// of the kind (a node restarted without a handler it had, a kind declared
// by Config.DeclaredKinds before its first worker, a worker that went
// away). Such runs wait in their kind's worker queue (workerwait.go),
// holding nothing, as runs waiting for a busy worker do; the node says
// so. The episodes themselves (begun once and ended once per episode,
// each logged once, and GetTask's waiting_reason) are internal/admission's
// (Workers, its unserved.go).
//
// Episodes are checked where the answer can change: when a run of a kind
// joins its kind's empty queue (admitWorkerLocked), when the workers'
// kinds change (remoteKindsLoop: a worker connected or went away), when
// worker slots are handed out (grantWorkersLocked: a joining worker frees
// slots), and when a waiting run leaves its queue without a worker
// (dropWorkerWaitLocked). While one lasts, Stats.WaitingUnserved counts
// its runs.

// CheckUnservedLocked begins the episodes of kinds whose runs wait and
// that no connected worker serves, and ends those of kinds a worker now
// serves or of which no run waits: the workers' kinds changed. n.mu held
// (the Remote's own lock is taken under it, as Reserve's is).
func (n *Dispatcher) CheckUnservedLocked() {
	n.Admit.workers.Check(n.Log)
}

// WaitingUnservedLocked counts the runs waiting in an episode, by kind,
// with 0 for a declared kind that has none. n.mu held.
func (n *Dispatcher) WaitingUnservedLocked() map[string]int {
	return n.Admit.workers.Unserved()
}

package dispatch

import "github.com/taskd/taskd/internal/held"

// This file connects the node to its status voter (contract §7): which entries
// count as pending or running, where votes are written, and the unmapping
// of an identity that stayed inactive with no tasks.

// TouchLocked recounts e for its identity's vote: a task counts while it
// is queued for a run or running. Caller holds n.mu.
func (n *Dispatcher) TouchLocked(e *held.Entry) {
	_, parked := n.parked[e] // a paused task is still pending
	want := !e.Gone && !e.Ident.Lost && !e.Purge && e.Ex().OverlapOf == nil && (e.Running || e.Idx >= 0 || parked || e.Thawing)
	if want == e.Counted {
		return
	}
	e.Counted = want
	if e.Ident.Scope.Votes() {
		d := -1
		if want {
			d = 1
		}
		n.Voter.Add(e.Ident.Name, d)
	}
}

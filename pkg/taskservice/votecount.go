package taskservice

// This file connects the node to its status voter (contract §7): which entries
// count as pending or running, where votes are written, and the unmapping
// of an identity that stayed inactive with no tasks.

// touchLocked recounts e for its identity's vote: a task counts while it
// is queued for a run or running. Caller holds n.mu.
func (n *Node) touchLocked(e *entry) {
	_, parked := n.parked[e] // a paused task is still pending
	want := !e.gone && !e.ident.lost && !e.purge && e.ex().overlapOf == nil && (e.running || e.idx >= 0 || parked || e.thawing)
	if want == e.counted {
		return
	}
	e.counted = want
	if e.ident.scope.owned() {
		d := -1
		if want {
			d = 1
		}
		n.voter.Add(e.ident.name, d)
	}
}

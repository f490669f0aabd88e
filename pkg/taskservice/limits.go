package taskservice

import "slices"

// This file is the per-kind concurrency limit of a node (Config.KindLimits).
//
// A limited kind has a number of tokens. A due entry of that kind takes one
// when its identity's starter takes it off the start queue (admitLocked),
// before it waits for a worker slot and before its start write; the token is
// held until the run ends (its commit included), or given back at once by a
// start that runs nothing. An entry that finds no token free does not hold
// its starter, a worker slot or its identity's other kinds: it waits in its
// kind's wait list, apart from the start queue, still due (its fire time
// and misfire handling unchanged: its start computes them when it comes).
//
// The wait list keeps one queue per identity, in start order, and hands a
// freed token to the identities with waiting runs in turn (round robin): an
// identity with a large backlog of one kind does not delay the other
// identities' runs of that kind by more than one run each. A run given a
// token goes to the front of its identity's start queue (grantQ) and starts
// like any other (the lease is checked at its start write and again right
// before its handler is called). Runs of one kind of one identity start in
// order: while one waits, every later one of that kind and identity waits
// behind it.

// admission is what a due run waits for before it starts, besides a slot
// (n.mu): its kind's concurrency limit (limits, a read-only map; this
// file), a remote worker of its kind (workerQs, by kind; workerwait.go),
// and the kinds whose runs wait here while nothing serves them (unserved;
// unserved.go). declared is Config.DeclaredKinds, read-only.
type admission struct {
	limits   map[string]*kindLimit
	workerQs map[string]*workerQueue
	unserved map[string]*unservedKind
	declared map[string]bool
}

func newAdmission(cfg Config) admission {
	a := admission{
		limits:   newKindLimits(cfg.KindLimits),
		workerQs: map[string]*workerQueue{},
		unserved: map[string]*unservedKind{},
		declared: map[string]bool{},
	}
	for _, k := range cfg.DeclaredKinds {
		a.declared[k] = true
	}
	return a
}

// kindLimit is the limit of one kind on this node. Guarded by n.mu.
type kindLimit struct {
	kind  string
	limit int
	// running counts the tokens taken: runs from their admission to their
	// end (or to a start that ran nothing).
	running int
	// waiting holds, per identity, the entries waiting for a token in start
	// order; ring lists the identities that have some, served in turn from
	// next.
	waiting map[*identState][]*entry
	ring    []*identState
	next    int
	nwait   int
}

func newKindLimits(limits map[string]int) map[string]*kindLimit {
	if len(limits) == 0 {
		return nil
	}
	out := make(map[string]*kindLimit, len(limits))
	for kind, n := range limits {
		out[kind] = &kindLimit{kind: kind, limit: n, waiting: map[*identState][]*entry{}}
	}
	return out
}

// limitOfLocked is the limit a due entry is under, or nil: purges and
// overlap shadows (whose overlapping run is a task of its own) take none.
func (n *Node) limitOfLocked(e *entry) *kindLimit {
	if len(n.admit.limits) == 0 || e.purge || e.ex().overlapOf != nil {
		return nil
	}
	return n.admit.limits[e.record().GetSpec().GetKind()]
}

// admitLocked filters a batch just taken off st's start queue: an entry of
// a limited kind goes on only with a token of its kind, and then one of a
// kind only remote workers serve only with a worker's slot reserved
// (workerwait.go); otherwise it waits, holding nothing more. n.mu held.
func (n *Node) admitLocked(st *identState, batch []*entry) []*entry {
	if len(n.admit.limits) == 0 && n.cfg.Remote == nil {
		return batch
	}
	out := batch[:0]
	for _, e := range batch {
		if n.admitLimitLocked(st, e) && n.admitWorkerLocked(e) {
			out = append(out, e)
		}
	}
	clear(batch[len(out):])
	return out
}

// admitLimitLocked lets e go on if it is of no limited kind or holds its
// kind's token, taking one if it is free and no earlier run of its kind and
// identity waits; otherwise e joins the kind's wait list and false is
// returned. n.mu held.
func (n *Node) admitLimitLocked(st *identState, e *entry) bool {
	if e.ex().token != nil {
		return true
	}
	lim := n.limitOfLocked(e)
	switch {
	case lim == nil:
		return true
	case len(lim.waiting[st]) == 0 && lim.running < lim.limit:
		lim.running++
		e.extra().token = lim
		return true
	}
	if len(lim.waiting[st]) == 0 {
		lim.ring = append(lim.ring, st)
	}
	lim.waiting[st] = append(lim.waiting[st], e)
	lim.nwait++
	return false
}

// grantLocked hands the free tokens of lim to waiting entries, one
// identity after another. n.mu held.
func (n *Node) grantLocked(lim *kindLimit) {
	for lim.running < lim.limit && len(lim.ring) > 0 {
		if lim.next >= len(lim.ring) {
			lim.next = 0
		}
		st := lim.ring[lim.next]
		q := lim.waiting[st]
		e := q[0]
		q[0] = nil
		q = q[1:]
		lim.nwait--
		if len(q) == 0 {
			delete(lim.waiting, st)
			lim.ring = slices.Delete(lim.ring, lim.next, lim.next+1)
		} else {
			lim.waiting[st] = q
			lim.next++
		}
		lim.running++
		e.extra().token = lim
		r := st.r()
		r.grantQ = append(r.grantQ, e)
		n.ensureStarterLocked(st)
	}
}

// releaseTokenLocked gives back the token *tok holds, if any, and hands it
// on. n.mu held.
func (n *Node) releaseTokenLocked(tok **kindLimit) {
	lim := *tok
	if lim == nil {
		return
	}
	*tok = nil
	lim.running--
	n.grantLocked(lim)
}

// forgetWaitingLocked takes a lost identity's entries out of the wait lists
// (its kinds' and the remote workers') and gives back the tokens and worker
// slots its queued entries held. n.mu held.
func (n *Node) forgetWaitingLocked(st *identState) {
	n.forgetWorkerWaitsLocked(st)
	for _, lim := range n.admit.limits {
		if q, ok := lim.waiting[st]; ok {
			lim.nwait -= len(q)
			delete(lim.waiting, st)
			i := slices.Index(lim.ring, st)
			lim.ring = slices.Delete(lim.ring, i, i+1)
			if lim.next > i {
				lim.next--
			}
		}
	}
	if st.run == nil {
		return
	}
	for _, q := range [][]*entry{st.run.grantQ, st.run.startQ} {
		for _, e := range q {
			n.releaseEntryHoldsLocked(e)
		}
	}
}

// waitingForLimitLocked counts the runs waiting for a token, by limited
// kind. n.mu held.
func (n *Node) waitingForLimitLocked() map[string]int {
	if len(n.admit.limits) == 0 {
		return nil
	}
	out := make(map[string]int, len(n.admit.limits))
	for kind, lim := range n.admit.limits {
		out[kind] = lim.nwait
	}
	return out
}

// releaseEntryHoldsLocked gives back the kind's token and the remote
// worker's slot e holds, if any. n.mu held.
func (n *Node) releaseEntryHoldsLocked(e *entry) {
	if e.x != nil {
		n.releaseTokenLocked(&e.x.token)
		n.releaseReservationLocked(e)
	}
}

// runEnded gives back the kind's token of a run whose commit is done (its
// worker slot and identity share went back when its handler returned).
func (n *Node) runEnded(f *flight) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.releaseTokenLocked(&f.token)
}

package dispatch

import (
	"github.com/taskd/taskd/internal/admission"
	"github.com/taskd/taskd/internal/held"
)

// This file is the node's side of the per-kind concurrency limit
// (Config.KindLimits): the tokens, the per-identity wait lists and their
// round robin are internal/admission's Limits. A due entry of a limited
// kind takes its token when its identity's starter takes it off the start
// queue (admitLocked), before it waits for a worker slot and before its
// start write, and holds it until the run ends (its commit included), or
// gives it back at once if its start runs nothing. While it waits for a
// token it holds nothing, still due (its fire time and misfire handling
// unchanged: its start computes them when it comes). A run given a token
// goes to the front of its identity's start queue (grantQ) and starts like
// any other (the lease is checked at its start write and again right
// before its handler is called).

// admitState is what a due run waits for before it starts, besides a slot
// (n.mu): its kind's concurrency limit (limits, read-only once made; this
// file), a remote worker of its kind and the kinds whose runs wait for one
// while nothing serves them (workers; workerwait.go, unserved.go). Their
// logic is internal/admission's; declared is Config.DeclaredKinds,
// read-only.
type admitState struct {
	limits   admission.Limits[*held.Entry, *held.Ident]
	workers  *workerWait
	declared map[string]bool
}

func newAdmission(cfg Config) admitState {
	declared := map[string]bool{}
	for _, k := range cfg.DeclaredKinds {
		declared[k] = true
	}
	return admitState{
		limits:   admission.NewLimits[*held.Entry, *held.Ident](cfg.KindLimits),
		workers:  admission.NewWorkers[*held.Entry, held.Slot](remoteOrNil(cfg.Remote), cfg.Name, declared),
		declared: declared,
	}
}

// limitOfLocked is the limit a due entry is under, or nil: purges and
// overlap shadows (whose overlapping run is a task of its own) take none.
func (n *Dispatcher) limitOfLocked(e *held.Entry) *held.KindLimit {
	if !n.Admit.limits.Any() || e.Purge || e.Ex().OverlapOf != nil {
		return nil
	}
	return n.Admit.limits.Of(e.Record().GetSpec().GetKind())
}

// admitLocked filters a batch just taken off st's start queue: an entry of
// a limited kind goes on only with a token of its kind, and then one of a
// kind only remote workers serve only with a worker's slot reserved
// (workerwait.go); otherwise it waits, holding nothing more. n.mu held.
func (n *Dispatcher) admitLocked(st *held.Ident, batch []*held.Entry) []*held.Entry {
	if !n.Admit.limits.Any() && n.cfg.Remote == nil {
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
func (n *Dispatcher) admitLimitLocked(st *held.Ident, e *held.Entry) bool {
	if e.Ex().Token != nil {
		return true
	}
	lim := n.limitOfLocked(e)
	if lim == nil {
		return true
	}
	if !lim.Take(st, e) {
		return false
	}
	e.Extra().Token = lim
	return true
}

// grantLocked hands the free tokens of lim to waiting entries, one
// identity after another: each goes to the front of its identity's start
// queue. n.mu held.
func (n *Dispatcher) grantLocked(lim *held.KindLimit) {
	lim.Grant(func(st *held.Ident, e *held.Entry) {
		e.Extra().Token = lim
		r := st.Activate()
		r.GrantQ = append(r.GrantQ, e)
		n.ensureStarterLocked(st)
	})
}

// ReleaseTokenLocked gives back the token *tok holds, if any, and hands it
// on. n.mu held.
func (n *Dispatcher) ReleaseTokenLocked(tok **held.KindLimit) {
	lim := *tok
	if lim == nil {
		return
	}
	*tok = nil
	lim.Release()
	n.grantLocked(lim)
}

// forgetWaitingLocked takes a lost identity's entries out of the wait lists
// (its kinds' and the remote workers') and gives back the tokens and worker
// slots its queued entries held. n.mu held.
func (n *Dispatcher) forgetWaitingLocked(st *held.Ident) {
	n.forgetWorkerWaitsLocked(st)
	n.Admit.limits.Forget(st)
	if st.Active == nil {
		return
	}
	for _, q := range [][]*held.Entry{st.Active.GrantQ, st.Active.StartQ} {
		for _, e := range q {
			n.releaseEntryHoldsLocked(e)
		}
	}
}

// WaitingForLimitLocked counts the runs waiting for a token, by limited
// kind. n.mu held.
func (n *Dispatcher) WaitingForLimitLocked() map[string]int {
	return n.Admit.limits.Waiting()
}

// releaseEntryHoldsLocked gives back the kind's token and the remote
// worker's slot e holds, if any. n.mu held.
func (n *Dispatcher) releaseEntryHoldsLocked(e *held.Entry) {
	if e.X != nil {
		n.ReleaseTokenLocked(&e.X.Token)
		n.releaseReservationLocked(e)
	}
}

// RunEnded gives back the kind's token of a run whose commit is done (its
// worker slot and identity share went back when its handler returned).
func (n *Dispatcher) RunEnded(f *held.Flight) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ReleaseTokenLocked(&f.Token)
}

// remoteOrNil is r as internal/admission asks for it: a nil interface,
// not a nil Remote inside one, when the node has no remote workers.
func remoteOrNil(r Remote) admission.Remote[held.Slot] {
	if r == nil {
		return nil
	}
	return r
}

// Declared reports whether kind is one of Config.DeclaredKinds.
func (n *Dispatcher) Declared(kind string) bool { return n.Admit.declared[kind] }

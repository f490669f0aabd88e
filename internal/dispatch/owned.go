package dispatch

import (
	"time"

	"github.com/taskd/taskd/pkg/identity"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is what internal/ownership asks of and tells the dispatcher
// (pkg/taskservice wires them as ownership.Engine): the identities it
// holds, the tasks an adoption or handoff installs, and the choice of what
// a drain or a rebalancing request moves. Each takes the engine lock.

// Held returns the epoch the node holds id under.
func (n *Dispatcher) Held(id string) (int64, bool) {
	n.Lock()
	defer n.Unlock()
	if st := n.Idents[id]; st != nil && !st.Lost {
		return st.Epoch, true
	}
	return 0, false
}

// Identities lists the identities the node holds.
func (n *Dispatcher) Identities() []string {
	n.Lock()
	defer n.Unlock()
	ids := make([]string, 0, len(n.Idents))
	for id, st := range n.Idents {
		if !st.Lost {
			ids = append(ids, id)
		}
	}
	return ids
}

// Forget drops id, whatever its epoch.
func (n *Dispatcher) Forget(id string) {
	n.Lock()
	defer n.Unlock()
	if st := n.Idents[id]; st != nil && !st.Lost {
		n.DropIdentityLocked(st)
	}
}

// TaskGone drops the entry of a task whose record is gone, unless a run of
// it is in flight (a waiting run is let go).
func (n *Dispatcher) TaskGone(id, taskID string) {
	n.Lock()
	defer n.Unlock()
	st := n.Idents[id]
	if st == nil {
		return
	}
	if x := st.Tasks.Get(taskID); x != nil && (!x.Running || n.UnwaitLocked(x)) {
		n.RemoveEntryLocked(x)
	}
}

// ChooseToMove marks leaving and returns up to limit of this node's
// identities that are idle through horizon: no run in flight or armed,
// nothing running, queued to start, thawing or waiting for another node's
// run, no entry due before horizon, not resting (moved away by this node
// recently). It looks at a bounded number of identities, in the map's
// (random) order, so a node mostly busy may give fewer than asked for this
// round. No run of a leaving identity starts (internal/runs/start.go).
func (n *Dispatcher) ChooseToMove(limit int, horizon time.Time, resting func(id string) bool) []string {
	n.Lock()
	defer n.Unlock()
	if n.Phase.Draining || n.Phase.State != taskdv1.NodeState_NODE_STATE_RUNNING {
		return nil
	}
	busy := map[string]bool{}
	for f := range n.Flights.Owned("") {
		busy[f.Ref.Identity] = true
	}
	var out []string
	looked := 0
	for id, st := range n.Idents {
		if len(out) == limit || looked == max(1024, 8*limit) {
			break
		}
		looked++
		if resting(id) || st.Lost || st.Leaving || st.Active != nil || busy[id] || !st.Quiet(horizon) {
			continue
		}
		st.Leaving = true
		out = append(out, id)
	}
	return out
}

// StopLeaving lets the identities chosen and not moved run again.
func (n *Dispatcher) StopLeaving(ids []string) {
	if len(ids) == 0 {
		return
	}
	n.Lock()
	for _, id := range ids {
		if st := n.Idents[id]; st != nil {
			st.Leaving = false
		}
	}
	n.Unlock()
	n.Kick()
}

// Movable returns the identities a drain can move now (no run in flight,
// or all of them once late) and how many are left in all.
func (n *Dispatcher) Movable(late bool) ([]identity.Owner, int) {
	n.Lock()
	defer n.Unlock()
	var ready []identity.Owner
	for id, st := range n.Idents {
		if late || n.IdentityFlightsLocked(id) == 0 {
			ready = append(ready, identity.Owner{Identity: id, Mapped: true, Node: n.cfg.Name,
				Incarnation: n.Incarnation, Epoch: st.Epoch})
		}
	}
	return ready, len(n.Idents)
}

package taskservice

import (
	"time"

	"github.com/taskd/taskd/internal/ownership"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// ownerSide is the node as its ownership sees it (ownership.Engine): what
// holds the identities' tasks. Its methods take n.mu; the Holder calls
// them without a lock of its own held.
type ownerSide Node

// newOwnership returns the ownership of n's identities.
func (n *Node) newOwnership(p parts) *ownership.Holder {
	return ownership.New(ownership.Config{
		Name: n.cfg.Name, Incarnation: n.incarnation, EtcdTimeout: n.cfg.EtcdTimeout, MaxTxnOps: n.cfg.MaxTxnOps,
		ColdAfter:     n.cfg.ColdAfter,
		HandoffPeriod: n.cfg.HandoffPeriod, HandoffStart: n.cfg.HandoffStart, DisableHandoffWatch: n.cfg.DisableHandoffWatch,
		DrainTimeout: n.cfg.DrainTimeout, RebalanceInterval: n.cfg.RebalanceInterval,
		VoteDelay: n.cfg.VoteDelay, RemoveDelay: n.cfg.RemoveDelay,
		Client: n.cfg.Client, Keys: n.keys, Map: p.idmap, Store: p.store, Shapes: n.writes.Shapes, Writer: n.writes.Writer,
		Member: n.member, Cluster: p.cluster, Watch: n.followers.watch, Engine: (*ownerSide)(n), Logger: n.log, Life: n.life.ctx,
		HandoffTaken: n.cfg.Observer.HandoffTaken, RebalanceMoves: n.cfg.Observer.RebalanceMoves,
	})
}

func (s *ownerSide) node() *Node { return (*Node)(s) }

// Install puts stored tasks of id, owned under epoch, into the queue
// (InstallTasks).
func (s *ownerSide) Install(id string, epoch int64, stored []pending.Stored, loadRev int64) {
	s.node().d.InstallTasks(id, epoch, stored, loadRev)
}

// Held returns the epoch the node holds id under.
func (s *ownerSide) Held(id string) (int64, bool) {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	if st := n.d.Idents[id]; st != nil && !st.Lost {
		return st.Epoch, true
	}
	return 0, false
}

// Identities lists the identities the node holds.
func (s *ownerSide) Identities() []string {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	ids := make([]string, 0, len(n.d.Idents))
	for id, st := range n.d.Idents {
		if !st.Lost {
			ids = append(ids, id)
		}
	}
	return ids
}

// Left drops an identity that is no longer this node's, unless it was
// adopted again at a later revision than rev.
func (s *ownerSide) Left(id string, rev int64) {
	n := s.node()
	n.d.Lock()
	st := n.d.Idents[id]
	if st == nil || st.Lost || st.Epoch > rev {
		n.d.Unlock()
		return
	}
	n.d.DropIdentityLocked(st)
	n.d.Unlock()
	n.log.Debug("identity moved away", "identity", id)
	n.emit(Event{Type: EventMoved, Identity: id})
}

// Forget drops id, whatever its epoch.
func (s *ownerSide) Forget(id string) {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	if st := n.d.Idents[id]; st != nil && !st.Lost {
		n.d.DropIdentityLocked(st)
	}
}

// TaskGone drops the entry of a task whose record is gone, unless a run of
// it is in flight (a waiting run is let go).
func (s *ownerSide) TaskGone(id, taskID string) {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	st := n.d.Idents[id]
	if st == nil {
		return
	}
	if x := st.Tasks.Get(taskID); x != nil && (!x.Running || n.d.UnwaitLocked(x)) {
		n.d.RemoveEntryLocked(x)
	}
}

// HandedOff tells the listeners what a handoff entry brought.
func (s *ownerSide) HandedOff(id, taskID, kind, from string) {
	s.node().emit(Event{Type: EventHandedOff, Identity: id, TaskID: taskID, Kind: kind, Message: "from " + from})
}

// Movable returns the identities a drain can move now (no run in flight,
// or all of them once late) and how many are left in all.
func (s *ownerSide) Movable(late bool) ([]identity.Owner, int) {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	var ready []identity.Owner
	for id, st := range n.d.Idents {
		if late || n.d.IdentityFlightsLocked(id) == 0 {
			ready = append(ready, identity.Owner{Identity: id, Mapped: true, Node: n.cfg.Name,
				Incarnation: n.incarnation, Epoch: st.Epoch})
		}
	}
	return ready, len(n.d.Idents)
}

// ChooseToMove marks leaving and returns up to limit of this node's
// identities that are idle through horizon: no run in flight or armed,
// nothing running, queued to start, thawing or waiting for another node's
// run, no entry due before horizon, not resting (moved away by this node
// recently). It looks at a bounded number of identities, in the map's
// (random) order, so a node mostly busy may give fewer than asked for this
// round. No run of a leaving identity starts (start.go).
func (s *ownerSide) ChooseToMove(limit int, horizon time.Time, resting func(id string) bool) []string {
	n := s.node()
	n.d.Lock()
	defer n.d.Unlock()
	if n.d.Phase.Draining || n.d.Phase.State != taskdv1.NodeState_NODE_STATE_RUNNING {
		return nil
	}
	busy := map[string]bool{}
	for f := range n.d.Flights.Owned("") {
		busy[f.Ref.Identity] = true
	}
	var out []string
	looked := 0
	for id, st := range n.d.Idents {
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
func (s *ownerSide) StopLeaving(ids []string) {
	if len(ids) == 0 {
		return
	}
	n := s.node()
	n.d.Lock()
	for _, id := range ids {
		if st := n.d.Idents[id]; st != nil {
			st.Leaving = false
		}
	}
	n.d.Unlock()
	n.d.Kick()
}

// Running reports whether the node is RUNNING.
func (s *ownerSide) Running() bool { return s.node().State() == taskdv1.NodeState_NODE_STATE_RUNNING }

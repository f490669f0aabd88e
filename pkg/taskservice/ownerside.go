package taskservice

import (
	"github.com/taskd/taskd/internal/dispatch"
	"github.com/taskd/taskd/internal/ownership"
	"github.com/taskd/taskd/pkg/pending"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// ownerSide is the node as its ownership sees it (ownership.Engine): the
// dispatcher, which holds the identities' tasks (internal/dispatch's
// owned.go), and the node's listeners and state. Its methods take the
// engine lock; the Holder calls them without a lock of its own held.
type ownerSide struct {
	*dispatch.Dispatcher
	n *Node
}

var _ ownership.Engine = ownerSide{}

// newOwnership returns the ownership of n's identities.
func (n *Node) newOwnership(p parts) *ownership.Holder {
	return ownership.New(ownership.Config{
		Name: n.cfg.Name, Incarnation: n.incarnation, EtcdTimeout: n.cfg.EtcdTimeout, MaxTxnOps: n.cfg.MaxTxnOps,
		ColdAfter:     n.cfg.ColdAfter,
		HandoffPeriod: n.cfg.HandoffPeriod, HandoffStart: n.cfg.HandoffStart, DisableHandoffWatch: n.cfg.DisableHandoffWatch,
		DrainTimeout: n.cfg.DrainTimeout, RebalanceInterval: n.cfg.RebalanceInterval,
		VoteDelay: n.cfg.VoteDelay, RemoveDelay: n.cfg.RemoveDelay,
		Client: n.cfg.Client, Keys: n.keys, Map: p.idmap, Store: p.store, Shapes: n.writes.Shapes, Writer: n.writes.Writer,
		Member: n.member, Cluster: p.cluster, Watch: n.followers.watch, Engine: ownerSide{n.d, n}, Logger: n.log, Life: n.life.Ctx,
		HandoffTaken: n.cfg.Observer.HandoffTaken, RebalanceMoves: n.cfg.Observer.RebalanceMoves,
	})
}

func (s ownerSide) node() *Node { return s.n }

// Install puts stored tasks of id, owned under epoch, into the queue
// (InstallTasks).
func (s ownerSide) Install(id string, epoch int64, stored []pending.Stored, loadRev int64) {
	s.InstallTasks(id, epoch, stored, loadRev)
}

// Left drops an identity that is no longer this node's, unless it was
// adopted again at a later revision than rev.
func (s ownerSide) Left(id string, rev int64) {
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

// HandedOff tells the listeners what a handoff entry brought.
func (s ownerSide) HandedOff(id, taskID, kind, from string) {
	s.node().emit(Event{Type: EventHandedOff, Identity: id, TaskID: taskID, Kind: kind, Message: "from " + from})
}

// Running reports whether the node is RUNNING.
func (s ownerSide) Running() bool { return s.node().State() == taskdv1.NodeState_NODE_STATE_RUNNING }

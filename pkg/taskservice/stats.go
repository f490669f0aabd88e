package taskservice

import (
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Stats is a snapshot of what only the node knows, for metrics: read with
// Node.Stats, which holds the node's lock while it counts.
type Stats struct {
	// State is the node's life-cycle state.
	State taskdv1.NodeState
	// SelfFenced is true while the node is RUNNING but starts no run because
	// its last acknowledged lease renewal is older than the lease margin
	// (two thirds of the TTL).
	SelfFenced bool
	// LeaseRenewedAt is when the last acknowledged lease renewal was sent;
	// zero before the first.
	LeaseRenewedAt time.Time
	// Identities is the number of durable identities the node owns.
	Identities int
	// TimerQueue is the number of entries in the node's timer queue: tasks
	// waiting for a fire time or a retry, due ones not yet started, and
	// finished one-shot tasks waiting for the end of their retention.
	TimerQueue int
	// Scheduled counts queued tasks whose next fire time is in the future.
	Scheduled int
	// Due counts queued tasks whose fire time has come and that have not
	// started yet (waiting for a worker, their identity's previous run, or
	// a fresh lease).
	Due int
	// Running counts runs in flight on this node.
	Running int
	// Retained counts finished tasks kept until their retention ends.
	Retained int
	// Cold counts the scheduled tasks that wait without their record in
	// memory (more than Config.ColdAfter from their due time); their
	// records are read again before they are due. They count in Scheduled
	// too.
	Cold int
	// WaitingForLimit counts, for each kind of Config.KindLimits, the due
	// runs waiting for that kind's limit (they are counted in Due too).
	WaitingForLimit map[string]int
	// WaitingForWorker counts, by kind, the due runs of kinds only remote
	// workers serve that wait for a worker with a free slot (they are
	// counted in Due too; they hold no run slot and their starts are not
	// written).
	WaitingForWorker map[string]int
	// WaitingUnserved counts, by kind, those of WaitingForWorker's runs
	// whose kind nothing on this node serves now: no handler, no connected
	// worker (internal/dispatch/unserved.go). A kind of Config.DeclaredKinds is listed with 0
	// while none of its runs waits.
	WaitingUnserved map[string]int
}

// Stats returns a snapshot of the node's counts. It walks the timer queue
// and the identities' start queues under the engine lock
// (dispatch.CountsLocked): its cost grows with the number of tasks held, so
// call it at the pace of a metrics scrape, not per event.
func (n *Node) Stats() Stats {
	now := time.Now()
	n.d.Lock()
	defer n.d.Unlock()
	renewed, fresh := n.member.Renewal()
	c := n.d.CountsLocked(now)
	return Stats{
		State:            n.d.Phase.State,
		SelfFenced:       n.d.Phase.State == taskdv1.NodeState_NODE_STATE_RUNNING && !fresh,
		LeaseRenewedAt:   renewed,
		Identities:       c.Identities,
		TimerQueue:       c.TimerQueue,
		Scheduled:        c.Scheduled,
		Due:              c.Due,
		Running:          c.Running,
		Retained:         c.Retained,
		Cold:             c.Cold,
		WaitingForLimit:  c.WaitingForLimit,
		WaitingForWorker: c.WaitingForWorker,
		WaitingUnserved:  c.WaitingUnserved,
	}
}

// Observer receives measurements the node takes on its own work, for
// metrics. Its functions are called synchronously from the node's
// goroutines: keep them quick. A nil function is not called.
type Observer struct {
	// TxnItems is told the number of writes (run starts, commits,
	// schedules) carried by each Txn the node's batcher sends.
	TxnItems func(items int)
	// HandoffTaken is told how long taking one handoff entry took (loading
	// the identity or task it names), for each entry taken without error.
	HandoffTaken func(took time.Duration)
	// RebalanceMoves is told, on the node whose identities move, how many
	// of them each rebalancing request of the placement leader moved
	// (internal/ownership), for every request that moved some.
	RebalanceMoves func(moves int)
}

// observeTxn reports a Txn of items writes to the observer.
func (o Observer) observeTxn(items int) {
	if o.TxnItems != nil {
		o.TxnItems(items)
	}
}

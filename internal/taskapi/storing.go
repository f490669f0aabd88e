package taskapi

import (
	"context"

	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// storing is what differs, by their scope, in storing the tasks of one
// group of a schedule request (contract §6): an IDENTITY group is written
// under its identity's mapping (mapping an unmapped identity in the same
// Txn), an EVERY_NODE group is stored once, with no mapping. A
// non-durable task is not stored at all (storingOf is nil; LocalRefs and
// the Engine keep it).
type storing interface {
	// add writes the live tasks of p into txn (place is the node the
	// attempt maps unmapped identities to, chosen once per attempt).
	add(ctx context.Context, a *Service, txn *writepath.Schedule, p *planned, recs []*storev1.TaskRecord, attempt int, place **placement.Candidate) error
	// unknown reacts to a write whose outcome is unknown.
	unknown(a *Service, p *planned)
	// refused reacts to a refused write, before the attempt is retried.
	refused(ctx context.Context, a *Service, p *planned)
	// stored hands on the tasks of p, stored at revision rev.
	stored(a *Service, p *planned, recs []*storev1.TaskRecord, rev int64)
}

// planned is a group as one attempt writes it.
type planned struct {
	g     *group
	live  []int          // the tasks not answered yet, indexes into the request
	owner identity.Owner // the mapping the write compares (IDENTITY)
	mine  bool           // the identity is, or is being, mapped to this node
}

// storingOf is how a spec's task is stored: the one place a spec's scope
// picks it.
func storingOf(spec *taskdv1.TaskSpec) storing {
	switch {
	case spec.GetNonDurable():
		return nil
	case spec.GetScope() == taskdv1.Scope_SCOPE_EVERY_NODE:
		return everyStoring{}
	}
	return identityStoring{}
}

// identityStoring stores tasks under their identity's mapping.
type identityStoring struct{}

func (identityStoring) add(ctx context.Context, a *Service, txn *writepath.Schedule, p *planned, recs []*storev1.TaskRecord, attempt int, place **placement.Candidate) error {
	// The first attempt needs no read: the owner comes from memory, or is
	// guessed (a cached remote owner, else unmapped) and the Txn's compare
	// checks the guess; a wrong guess costs a retry.
	owner, err := a.ownerOf(ctx, p.g.id, attempt > 0)
	if err != nil {
		return err
	}
	target, targetInc := owner.Node, owner.Incarnation
	if owner.Mapped {
		txn.Owned(p.g.id, owner.Epoch)
	} else {
		if *place == nil {
			if *place, err = a.placement(ctx); err != nil {
				return err
			}
			txn.Target((*place).Name, (*place).Lease)
		}
		target, targetInc = (*place).Name, (*place).Inc
		txn.Map(p.g.id, target, targetInc)
	}
	p.owner, p.mine = owner, target == a.cfg.Name && targetInc == a.cfg.Incarnation
	for _, i := range p.live {
		if err := txn.Task(recs[i]); err != nil {
			return err
		}
		if !p.mine {
			// The owner loads each task from its handoff area.
			op, err := a.cfg.Shapes.Handoff(target, p.g.id, recs[i].Id)
			if err != nil {
				return err
			}
			txn.Also(op)
		}
	}
	return nil
}

// unknown: maybe applied. An identity this node would own is read again
// once the Txn is surely over, so that a task that was stored is run (the
// other owners get the handoff entries written in the same Txn).
func (identityStoring) unknown(a *Service, p *planned) {
	if p.mine {
		a.cfg.Engine.Repair(p.g.id, 0)
		a.cfg.Engine.Repair(p.g.id, a.cfg.EtcdTimeout)
	}
}

// refused: the mapping compared may be stale.
func (identityStoring) refused(ctx context.Context, a *Service, p *planned) {
	a.forgetOwner(ctx, p.g.id, p.owner)
}

// stored: the tasks of an identity mapped here are queued, under the epoch
// of the mapping compared, or of the one this write made.
func (identityStoring) stored(a *Service, p *planned, recs []*storev1.TaskRecord, rev int64) {
	epoch := p.owner.Epoch
	if !p.owner.Mapped {
		epoch = rev
	}
	if p.mine && len(p.live) > 0 {
		a.cfg.Engine.AddOwned(p.g.id, epoch, pick(recs, p.live), rev)
	}
}

// everyStoring stores EVERY_NODE tasks once, with no mapping: every node
// runs them, learning of them through its watch.
type everyStoring struct{}

func (everyStoring) add(_ context.Context, _ *Service, txn *writepath.Schedule, p *planned, recs []*storev1.TaskRecord, _ int, _ **placement.Candidate) error {
	for _, i := range p.live {
		if err := txn.EveryTask(recs[i]); err != nil {
			return err
		}
	}
	return nil
}

func (everyStoring) unknown(*Service, *planned)                  {} // every node's watch will tell
func (everyStoring) refused(context.Context, *Service, *planned) {} // no mapping to forget

// stored: this node learns of them at once; the others through the watch.
func (everyStoring) stored(a *Service, p *planned, recs []*storev1.TaskRecord, rev int64) {
	for _, i := range p.live {
		b, _ := pending.Encode(recs[i])
		a.cfg.EveryNode.Learn(p.g.id, b, rev)
	}
}

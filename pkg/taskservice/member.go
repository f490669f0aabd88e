package taskservice

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/membership"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file is the node's side of its membership (internal/membership owns
// the registration, the lease, its renewals and self-fencing): the record
// the node registers, and what the node does when its lease is lost and
// taken again.

// ErrNameInUse reports that a live process holds the node's name.
var ErrNameInUse = membership.ErrNameInUse

// IncarnationHealthService is the gRPC health service name under which the
// process serving a node announces the node's incarnation. Registering it
// (with any status) in the node's gRPC health server lets a start under the
// same name refuse to replace this node while it is live.
func IncarnationHealthService(incarnation string) string {
	return membership.IncarnationHealthService(incarnation)
}

// newMember returns the membership of n (its registration under its lease).
func (n *Node) newMember() *membership.Member {
	return membership.New(membership.Config{
		Client:      n.cfg.Client,
		Prefix:      n.cfg.Prefix,
		Name:        n.cfg.Name,
		Incarnation: n.incarnation,
		TTL:         n.cfg.LeaseTTL,
		EtcdTimeout: n.cfg.EtcdTimeout,
		Replace:     n.cfg.Replace,
		PeerTLS:     n.cfg.PeerTLS,
		Logger:      n.log,
		Node:        (*memberSide)(n),
	})
}

// memberSide is the node as its membership sees it (membership.Node). Its
// methods are called without the member's lock held; they take n.mu.
type memberSide Node

// Record encodes the node's registration.
func (s *memberSide) Record() ([]byte, error) {
	n := (*Node)(s)
	n.d.Lock()
	rec := &storev1.NodeRecord{
		Name:        n.cfg.Name,
		Incarnation: n.incarnation,
		Address:     n.cfg.Address,
		State:       n.d.Phase.State,
		StartedAt:   timestamppb.New(n.life.Since()),
		Kinds:       n.Kinds(),
	}
	if !n.d.Phase.DispatchStart.IsZero() {
		rec.DispatchStart = timestamppb.New(n.d.Phase.DispatchStart)
	}
	n.d.Unlock()
	b, err := proto.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode node record: %w", err)
	}
	return b, nil
}

// Registered rewrites what the node keeps under its lease: the calendar
// references of the non-durable tasks held here were under the old lease
// (or none, before the first registration).
func (s *memberSide) Registered(ctx context.Context) error {
	n := (*Node)(s)
	return n.refs.Restore(ctx, func() []*storev1.TaskRecord {
		n.d.Lock()
		defer n.d.Unlock()
		var held []*storev1.TaskRecord
		for _, st := range n.d.Local {
			for e := range st.Tasks.All() {
				if rec := e.Record(); rec != nil {
					held = append(held, rec)
				}
			}
		}
		return held
	})
}

// Fence forgets every identity, and cancels the handlers of the runs in
// flight (their results can no longer be committed by this node, and a new
// owner may run them again): nothing new starts until the identities are
// adopted again.
func (s *memberSide) Fence() {
	n := (*Node)(s)
	n.d.Lock()
	defer n.d.Unlock()
	for _, st := range n.d.Idents {
		n.d.DropIdentityLocked(st)
	}
	n.d.FenceFlightsLocked(errLeaseLost)
}

// Rejoined re-adopts the identities still mapped to this name, once the
// node registered again after losing its lease.
func (s *memberSide) Rejoined(ctx context.Context) error {
	n := (*Node)(s)
	if err := n.own.AdoptOwned(ctx); err != nil {
		return err
	}
	n.log.Info("rejoined after losing the lease", "identities", n.ownedCount())
	n.d.Kick()
	return nil
}

// Renewed wakes the dispatcher: runs held back while the lease was not
// proven may start.
func (s *memberSide) Renewed() { (*Node)(s).d.Kick() }

// Stopping reports whether Stop has begun. The lease keeper runs until Stop
// has seen the last run's outcome committed (Node.keeper); a lease lost
// while the node stops is not taken again.
func (s *memberSide) Stopping() bool { return (*Node)(s).life.Ctx.Err() != nil }

// Replaced stops the node: a newer incarnation of its name took over.
func (s *memberSide) Replaced(error) { (*Node)(s).stopAsync() }

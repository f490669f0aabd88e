package taskservice

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/placement"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is the node's side of placement (internal/placement moves
// identities between nodes, contract §3.1-3.2, and is the placement leader:
// a dead node's identities reassigned, rebalancing planned): the explicit
// moves, and the leader as the node starts it. Draining (drain.go) and
// serving rebalancing requests (rebalancerequest.go) move through the same
// Cluster.

// newCluster is the cluster as this node's placement sees it.
func (n *Node) newCluster() placement.Cluster {
	return placement.Cluster{Client: n.cli, Keys: n.keys, Map: n.idmap, Shapes: n.shapes, Writer: n.writer,
		EtcdTimeout: n.cfg.EtcdTimeout, MaxTxnOps: n.cfg.MaxTxnOps}
}

// newLeader returns the placement leader this node campaigns as.
func (n *Node) newLeader() *placement.Leader {
	return placement.New(placement.Config{
		Cluster:            n.cluster,
		Name:               n.cfg.Name,
		Incarnation:        n.incarnation,
		Lease:              n.member,
		Node:               (*leaderSide)(n),
		Retry:              n.cfg.HandoffPeriod,
		SweepEvery:         n.cfg.LeaseTTL,
		Retention:          n.cfg.Retention,
		DisableRebalance:   n.cfg.DisableRebalance,
		RebalanceInterval:  n.cfg.RebalanceInterval,
		RebalanceRate:      n.cfg.RebalanceRate,
		RebalanceTolerance: n.cfg.RebalanceTolerance,
		Logger:             n.log,
	})
}

// leaderSide is the node as its placement leader sees it (placement.Node).
type leaderSide Node

// EveryDeleteOps are the deletes of a cancelled EVERY_NODE task the leader
// purges, as DeleteTask makes them.
func (s *leaderSide) EveryDeleteOps(ctx context.Context, rec *storev1.TaskRecord) ([]clientv3.Op, error) {
	return (*Node)(s).everyDeleteOps(ctx, rec)
}

// MoveIdentity moves id to the RUNNING node to (contract §3.1): one Txn changes
// the mapping (a new epoch) and writes the handoff entry that the new owner
// picks up; the old owner drops the identity when it sees the change.
func (n *Node) MoveIdentity(ctx context.Context, id, to string) (*taskdv1.Identity, error) {
	for attempt := 0; attempt < 5; attempt++ {
		cs, err := n.cluster.Candidates(ctx)
		if err != nil {
			return nil, err
		}
		var target *placement.Candidate
		for _, c := range cs {
			if c.Name == to {
				target = c
			}
		}
		if target == nil {
			return nil, fmt.Errorf("node %q is not registered: %w", to, ErrFailedPrecondition)
		}
		if target.State != taskdv1.NodeState_NODE_STATE_RUNNING {
			return nil, fmt.Errorf("node %q is %s, not RUNNING: %w", to,
				strings.TrimPrefix(target.State.String(), "NODE_STATE_"), ErrFailedPrecondition)
		}
		cctx, cancel := n.etcdCtx(ctx)
		owner, err := n.idmap.Get(cctx, id)
		cancel()
		if err != nil {
			return nil, err
		}
		if owner.Mapped && owner.Node == target.Name && owner.Incarnation == target.Inc {
			return n.GetIdentity(ctx, id)
		}
		_, ok, err := n.cluster.CommitMoves(ctx, []placement.Move{{From: owner, To: target}})
		if err != nil {
			return nil, err
		}
		if ok {
			n.log.Info("identity moved", "identity", id, "from", owner.Node, "to", to)
			return n.GetIdentity(ctx, id)
		}
	}
	return nil, fmt.Errorf("move %q: the mapping or the target kept changing: %w", id, ErrConflict)
}

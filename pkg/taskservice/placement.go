package taskservice

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/pkg/identity"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file is the node's side of placement (internal/placement moves
// identities between nodes, contract §3.1-3.2, and is the placement leader:
// a dead node's identities reassigned, rebalancing planned): the explicit
// moves, and the leader as the node starts it. Draining (drain.go) and
// serving rebalancing requests (internal/ownership) move through the same
// Cluster.

// newCluster is the cluster as this node's placement sees it.
func (n *Node) newCluster(idmap *identity.Map) placement.Cluster {
	return placement.Cluster{Client: n.cfg.Client, Keys: n.keys, Map: idmap, Shapes: n.writes.Shapes, Writer: n.writes.Writer,
		EtcdTimeout: n.cfg.EtcdTimeout, MaxTxnOps: n.cfg.MaxTxnOps}
}

// newLeader returns the placement leader this node campaigns as.
func (n *Node) newLeader(cluster placement.Cluster) *placement.Leader {
	return placement.New(placement.Config{
		Cluster:            cluster,
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
	return (*Node)(s).api.EveryDeleteOps(ctx, rec)
}

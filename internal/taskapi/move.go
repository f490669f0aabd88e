package taskapi

import (
	"context"
	"fmt"
	"strings"

	"github.com/taskd/taskd/internal/outcome"
	"github.com/taskd/taskd/internal/placement"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// MoveIdentity moves id to the RUNNING node to (contract §3.1): one Txn
// changes the mapping (a new epoch).
func (a *Service) MoveIdentity(ctx context.Context, id, to string) (*taskdv1.Identity, error) {
	for attempt := 0; attempt < 5; attempt++ {
		cs, err := a.cfg.Cluster.Candidates(ctx)
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
			return nil, fmt.Errorf("node %q is not registered: %w", to, outcome.ErrFailedPrecondition)
		}
		if target.State != taskdv1.NodeState_NODE_STATE_RUNNING {
			return nil, fmt.Errorf("node %q is %s, not RUNNING: %w", to,
				strings.TrimPrefix(target.State.String(), "NODE_STATE_"), outcome.ErrFailedPrecondition)
		}
		cctx, cancel := a.etcdCtx(ctx)
		owner, err := a.cfg.Map.Get(cctx, id)
		cancel()
		if err != nil {
			return nil, err
		}
		if owner.Mapped && owner.Node == target.Name && owner.Incarnation == target.Inc {
			return a.GetIdentity(ctx, id)
		}
		_, ok, err := a.cfg.Cluster.CommitMoves(ctx, []placement.Move{{From: owner, To: target}})
		if err != nil {
			return nil, err
		}
		if ok {
			a.log.Info("identity moved", "identity", id, "from", owner.Node, "to", to)
			return a.GetIdentity(ctx, id)
		}
	}
	return nil, fmt.Errorf("move %q: the mapping or the target kept changing: %w", id, outcome.ErrConflict)
}

// DrainNode asks the named RUNNING (or DRAINING) node to drain, through
// its control key. The request names the incarnation it asks, so a later
// incarnation of the name ignores it. It returns the node as registered.
func (a *Service) DrainNode(ctx context.Context, node string) (*taskdv1.Node, error) {
	nodes, err := a.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	for _, nd := range nodes {
		if nd.Name != node {
			continue
		}
		if nd.State != taskdv1.NodeState_NODE_STATE_RUNNING && nd.State != taskdv1.NodeState_NODE_STATE_DRAINING {
			return nil, fmt.Errorf("node %q is %s: %w", node, nd.State, outcome.ErrFailedPrecondition)
		}
		cctx, cancel := a.etcdCtx(ctx)
		defer cancel()
		if _, err := a.cfg.Client.Put(cctx, a.cfg.Keys.DrainRequest(node), nd.Incarnation); err != nil {
			return nil, fmt.Errorf("request drain of %s: %w", node, err)
		}
		return nd, nil
	}
	return nil, fmt.Errorf("node %q is not registered: %w", node, outcome.ErrNotFound)
}

package placement

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdwatch"
	"github.com/taskd/taskd/internal/follow"
	"github.com/taskd/taskd/pkg/identity"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// Node is what the leader needs of the node it runs on.
type Node interface {
	// EveryDeleteOps are the operations that delete the EVERY_NODE task
	// rec, with the nodes' progress (as DeleteTask deletes it).
	EveryDeleteOps(ctx context.Context, rec *storev1.TaskRecord) ([]clientv3.Op, error)
}

// LeaseSource gives the node's current lease (membership.Member): the
// leader key is held under it, so it ends with the node's registration.
type LeaseSource interface {
	Lease() clientv3.LeaseID
}

// Config is what a Leader needs.
type Config struct {
	Cluster Cluster // the reads and the moves; its EtcdTimeout bounds every call
	// Name and Incarnation are the node's: the leader key's value, and the
	// leader named in its rebalancing requests.
	Name, Incarnation string
	Lease             LeaseSource
	Node              Node
	// Retry is the breath after a failed campaign and the longest wait
	// between failed lists of the registrations; a batch of moves refused
	// by a compare is tried again after a tenth of it (the node's
	// HandoffPeriod).
	Retry time.Duration
	// SweepEvery is the period of the sweeps besides those a node's death
	// brings at once (the node's LeaseTTL).
	SweepEvery time.Duration
	// Retention is how long a cancelled EVERY_NODE task is kept.
	Retention time.Duration
	// The rebalancing rounds (rebalance.go): off, or one per interval, of
	// at most rate moves, until the spread is within tolerance percent of
	// the mean.
	DisableRebalance   bool
	RebalanceInterval  time.Duration
	RebalanceRate      int
	RebalanceTolerance int
	Logger             hclog.Logger
}

// Leader campaigns to be the placement leader and leads while it holds
// the leader key.
type Leader struct {
	cfg Config
	cl  Cluster
	log hclog.Logger
}

// New returns a Leader that has not begun campaigning.
func New(cfg Config) *Leader {
	return &Leader{cfg: cfg, cl: cfg.Cluster, log: cfg.Logger}
}

func (ld *Leader) etcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return ld.cl.etcdCtx(ctx)
}

// Run campaigns to be the placement leader and, while leader, reassigns
// the identities of dead nodes (contract §3.1, §5.4's counterpart for a
// node that does not come back) and rebalances the RUNNING nodes
// (rebalance.go), until ctx ends.
func (ld *Leader) Run(ctx context.Context) {
	for ctx.Err() == nil {
		l, err := ld.campaign(ctx)
		if err != nil {
			// Most likely the lease expired and the node is registering
			// again: campaign with its new lease after a breath.
			ld.log.Debug("placement campaign ended", "error", err)
			select {
			case <-time.After(ld.cfg.Retry):
			case <-ctx.Done():
			}
			continue
		}
		ld.log.Info("placement leader")
		ld.lead(ctx, l)
		ld.log.Info("placement leadership ended")
	}
}

// campaign waits until this node holds the leader key, under the node's
// current lease (identity.Campaign).
func (ld *Leader) campaign(ctx context.Context) (identity.Leadership, error) {
	lease := ld.cfg.Lease.Lease()
	key := ld.cl.Keys.Leader()
	claim := ld.cl.Shapes.Claim(key, ld.cfg.Name+" "+ld.cfg.Incarnation, lease)
	return identity.Campaign(ctx, ld.cl.Client, func(ctx context.Context) (*clientv3.TxnResponse, error) { return ld.cl.Writer.Commit(ctx, claim) },
		key, lease, ld.cl.EtcdTimeout)
}

// lead does the leader's work until the holding l ends.
func (ld *Leader) lead(ctx context.Context, l identity.Leadership) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		identity.Lost(ctx, ld.cl.Client, l, ld.cl.EtcdTimeout)
		cancel()
	}()
	sweep := make(chan struct{}, 1)
	go func() {
		defer wg.Done()
		ld.watchNodeDeaths(ctx, sweep)
	}()
	ticker := time.NewTicker(ld.cfg.SweepEvery)
	rebalance, stopRebalance := ld.rebalanceTicks()
	for skipSweep := false; ctx.Err() == nil; {
		if !skipSweep {
			if err := ld.sweep(ctx, l); err != nil && ctx.Err() == nil {
				ld.log.Warn("placement sweep failed", "error", err)
			}
		}
		skipSweep = false
		select {
		case <-sweep:
		case <-ticker.C:
		case <-rebalance:
			// In turn with the sweeps: a dead node's identities are
			// reassigned before the spread is looked at.
			ld.rebalanceRound(ctx, l)
			skipSweep = true
		case <-ctx.Done():
		}
	}
	stopRebalance()
	ticker.Stop()
	cancel()
	wg.Wait()
}

// watchNodeDeaths signals sweep whenever a node's registration goes away,
// and after every list of the registrations: the first, which closes the
// gap between the leader's first sweep and the watch, and each one after a
// break of the watch, when deaths may have gone unseen.
func (ld *Leader) watchNodeDeaths(ctx context.Context, sweep chan<- struct{}) {
	signal := func() {
		select {
		case sweep <- struct{}{}:
		default:
		}
	}
	ld.follow(ctx, "registrations", etcdwatch.Follower{
		Key:     ld.cl.Keys.Nodes(),
		Options: []clientv3.OpOption{clientv3.WithPrefix()},
		// The sweep itself reads the registrations; the list only fixes
		// the revision the watch starts after.
		List: func(ctx context.Context) (int64, error) {
			cctx, cancel := ld.etcdCtx(ctx)
			defer cancel()
			resp, err := ld.cl.Client.Get(cctx, ld.cl.Keys.Nodes(), clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return 0, err
			}
			signal()
			return resp.Header.Revision, nil
		},
		Events: func(_ context.Context, evs []*clientv3.Event) {
			for _, ev := range evs {
				if ev.Type == clientv3.EventTypeDelete {
					signal()
				}
			}
		},
	})
}

// follow runs f on the one watch-and-relist loop (follow.Watch.Follow,
// whose doc states the guarantee): a list that fails is tried again after
// about 50 ms, the waits growing to Retry.
func (ld *Leader) follow(ctx context.Context, what string, f etcdwatch.Follower) {
	follow.Watch{Client: ld.cl.Client, Keys: ld.cl.Keys, EtcdTimeout: ld.cl.EtcdTimeout, MaxWait: ld.cfg.Retry, Logger: ld.log}.
		Follow(ctx, what, f)
}

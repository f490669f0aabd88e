package follow

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdwatch"
	"github.com/taskd/taskd/internal/keyspace"
)

// Watch is what every follower needs to read and follow its keys.
type Watch struct {
	Client      *clientv3.Client
	Keys        keyspace.Keys
	EtcdTimeout time.Duration // bounds each list
	// MaxWait is the longest wait between failed lists (the node's
	// HandoffPeriod); the first wait is 50 ms, or MaxWait if shorter.
	MaxWait time.Duration
	Logger  hclog.Logger
}

// Follow runs f over w's client until ctx ends: a list that fails is tried
// again after about 50 ms, the waits growing to MaxWait, and a broken
// watch is logged (at debug: the list that follows repairs it). It is the
// one loop of the followers here, and of the node's other watches (the
// ownership index, the registrations) and the tokens' follower.
func (w Watch) Follow(ctx context.Context, what string, f etcdwatch.Follower) {
	f.Client = w.Client
	f.Initial = min(50*time.Millisecond, w.MaxWait)
	f.Max = w.MaxWait
	f.Broken = func(err error) {
		w.Logger.Debug("watch broken; listing again", "watch", what, "error", err)
	}
	f.Run(ctx)
}

func (w Watch) etcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, w.EtcdTimeout)
}

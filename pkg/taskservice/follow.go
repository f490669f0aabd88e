package taskservice

import (
	"context"
	"time"

	"github.com/taskd/taskd/internal/etcdwatch"
)

// follow runs f over the node's etcd client until ctx ends (etcdwatch
// states the guarantee). A list that fails is tried again after about 50 ms,
// the waits growing to HandoffPeriod, the pause these loops have always
// kept between failed lists.
func (n *Node) follow(ctx context.Context, what string, f etcdwatch.Follower) {
	f.Client = n.cli
	f.Initial = min(50*time.Millisecond, n.cfg.HandoffPeriod)
	f.Max = n.cfg.HandoffPeriod
	f.Broken = func(err error) {
		n.log.Debug("watch broken; listing again", "watch", what, "error", err)
	}
	f.Run(ctx)
}

package follow

import (
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdwatch"
)

// OnControl is what a Control tells the node: a request found in its
// control area, standing at rev (the key's mod revision, which the node's
// delete of the request compares). Either may be nil. Each is called on
// Run's goroutine, with Run's context, and the next request waits for it
// to return.
type OnControl struct {
	// Drain: a drain request (DrainNode, from any node), meant for the
	// incarnation named.
	Drain func(ctx context.Context, incarnation string, rev int64)
	// Rebalance: the placement leader's rebalancing request, as encoded.
	Rebalance func(ctx context.Context, request string, rev int64)
}

// Control follows one node's control area (keyspace.Keys.Control): the
// requests other nodes write for it. It keeps nothing and so has no lock:
// each request found, by a list or by the watch, is handed to the node,
// which acts on it and deletes it. A list (the first, and each after a
// break of the watch) hands over every request standing, so one written
// while the watch was broken is acted on. The node deletes each request
// it is handed; one still standing at a list (its delete failed) is handed
// over again. A deletion is no news.
type Control struct {
	w    Watch
	node string
	on   OnControl
}

// NewControl returns the follower of node's control area.
func NewControl(w Watch, node string, on OnControl) *Control {
	return &Control{w: w, node: node, on: on}
}

// Run follows the control area until ctx ends, listing it first.
func (c *Control) Run(ctx context.Context) {
	area := c.w.Keys.Control(c.node)
	c.w.Follow(ctx, "control area", etcdwatch.Follower{
		Key:     area,
		Options: []clientv3.OpOption{clientv3.WithPrefix()},
		List: func(ctx context.Context) (int64, error) {
			cctx, cancel := c.w.etcdCtx(ctx)
			resp, err := c.w.Client.Get(cctx, area, clientv3.WithPrefix())
			cancel()
			if err != nil {
				return 0, err
			}
			for _, kv := range resp.Kvs {
				c.hand(ctx, kv)
			}
			return resp.Header.Revision, nil
		},
		Events: func(ctx context.Context, evs []*clientv3.Event) {
			for _, ev := range evs {
				if ev.Type == clientv3.EventTypePut {
					c.hand(ctx, ev.Kv)
				}
			}
		},
	})
}

// hand gives the node the request at kv, if it is one; another key of the
// area is left alone.
func (c *Control) hand(ctx context.Context, kv *mvccpb.KeyValue) {
	switch string(kv.Key) {
	case c.w.Keys.DrainRequest(c.node):
		if c.on.Drain != nil {
			c.on.Drain(ctx, string(kv.Value), kv.ModRevision)
		}
	case c.w.Keys.RebalanceRequest(c.node):
		if c.on.Rebalance != nil {
			c.on.Rebalance(ctx, string(kv.Value), kv.ModRevision)
		}
	}
}

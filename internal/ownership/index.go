package ownership

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdwatch"
	"github.com/taskd/taskd/internal/keyspace"
)

// This file is the watch on the node's ownership index (contract §3.3): a
// deleted entry means the identity was moved away or unmapped, so the
// engine drops it (its runs in flight finish and fail their fence); a new
// one is followed up if nothing else loads it.

// RunIndex follows this node's ownership index until ctx ends. After any
// break of the watch the index is listed again and identities not in it
// dropped.
func (h *Holder) RunIndex(ctx context.Context) {
	prefix := h.cfg.Map.Keys().OwnedPrefix(h.cfg.Name)
	h.cfg.Watch.Follow(ctx, "ownership index", etcdwatch.Follower{
		Key:     prefix,
		Options: []clientv3.OpOption{clientv3.WithPrefix()},
		List:    h.reconcile,
		Events: func(_ context.Context, evs []*clientv3.Event) {
			for _, ev := range evs {
				id, err := keyspace.Decode(string(ev.Kv.Key[len(prefix):]))
				if err != nil {
					continue
				}
				if ev.Type == clientv3.EventTypeDelete {
					h.engine.Left(id, ev.Kv.ModRevision)
					continue
				}
				// Mapped to this name: the handoff or schedule that did it
				// loads it; if nothing has after a while, look for ourselves.
				h.RepairIfMissing(id, ownedGrace)
			}
		},
	})
}

// reconcile drops identities no longer in the ownership index, follows up
// those in it the engine does not hold, and returns the revision it read
// at.
func (h *Holder) reconcile(ctx context.Context) (int64, error) {
	cctx, cancel := h.etcdCtx(ctx)
	defer cancel()
	prefix := h.cfg.Map.Keys().OwnedPrefix(h.cfg.Name)
	resp, err := h.cfg.Client.Get(cctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, err
	}
	in := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if id, err := keyspace.Decode(string(kv.Key[len(prefix):])); err == nil {
			in[id] = true
		}
	}
	held := h.engine.Identities()
	for _, id := range held {
		if !in[id] {
			h.engine.Left(id, resp.Header.Revision)
		}
		delete(in, id)
	}
	for id := range in {
		h.RepairIfMissing(id, ownedGrace)
	}
	return resp.Header.Revision, nil
}

// ownedGrace is how long an identity may sit in this node's ownership index
// without the node holding it before the node looks for itself: longer than
// a handoff pick-up or a schedule's own follow-up normally takes.
const ownedGrace = 2 * time.Second

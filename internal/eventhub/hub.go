package eventhub

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdwatch"
	"github.com/taskd/taskd/internal/keyspace"
)

// Config is what a Hub needs of its node.
type Config struct {
	Client *clientv3.Client
	// Prefix is the cluster's key prefix (ending in '/'): the Hub watches
	// all of it.
	Prefix string
	Logger hclog.Logger
	// EtcdTimeout bounds each of the Hub's etcd reads.
	EtcdTimeout time.Duration
	// Life is the node's life: once it ends, no stream starts and one
	// waiting for the Hub's first list ends (ErrStreamInterrupted).
	Life context.Context
	// Buffer bounds, in encoded bytes, the events one stream holds for its
	// reader (a revision's events always fit an empty buffer).
	Buffer int
	// MaxStreams bounds the streams open at once (ErrTooManyStreams).
	MaxStreams int
}

// Hub is the node's one etcd watch of the event stream, and its
// subscribers. It watches the whole key prefix with previous values,
// derives each revision's events once (derive.go), and offers them to
// every stream it feeds (its subscribers), in revision order. It never
// waits for a subscriber: one whose buffer is full is ended instead
// (RESOURCE_EXHAUSTED with the cursor to resume from), so the Hub reads
// its watch as fast as etcd sends it and etcd's client, which buffers a
// watch's responses without limit, holds next to nothing.
//
// Before the Hub every stream had a watch of its own, fed at its reader's
// pace: a reader that stopped reading made etcd's client buffer every
// write of the cluster for it (216 MiB after 42 MB of writes).
//
// Lock: mu guards subs, gap, ready, stopped and the writes of pos; der is
// used by the Hub's goroutine only. mu is taken before a subscriber's mu,
// never under it.
type Hub struct {
	cfg  Config
	keys keyspace.Keys
	// pos is the hub's position: every revision up to it has been offered
	// to the subscribers (zero until the first list). Written under mu.
	pos atomic.Int64
	// streams counts the WatchEvents streams open, joined or catching up,
	// against Config.MaxStreams.
	streams atomic.Int64

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	gap     bool          // the watch broke on a compacted revision: the events after pos are lost
	ready   chan struct{} // closed by the first list
	stopped bool
	der     *deriver // used by the hub's goroutine only
}

// New returns a Hub that serves no stream until Run's first list.
func New(cfg Config) *Hub {
	h := &Hub{cfg: cfg, keys: keyspace.New(cfg.Prefix), subs: map[*subscriber]struct{}{}, ready: make(chan struct{})}
	h.der = h.newDeriver()
	return h
}

func (h *Hub) etcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, h.cfg.EtcdTimeout)
}

// Run follows the prefix until ctx ends, then ends every subscriber with
// UNAVAILABLE and its cursor.
func (h *Hub) Run(ctx context.Context) {
	f := etcdwatch.Follower{
		Client:  h.cfg.Client,
		Key:     h.cfg.Prefix,
		Options: []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV()},
		List:    h.list,
		Events:  h.events,
		Initial: 50 * time.Millisecond,
		Max:     2 * time.Second,
		Broken: func(err error) {
			if errors.Is(err, rpctypes.ErrCompacted) {
				h.mu.Lock()
				h.gap = true
				h.mu.Unlock()
			}
			h.cfg.Logger.Debug("event watch broken; resuming", "error", err)
		},
	}
	f.Run(ctx)
	h.stop()
}

// list is the follower's list: after a break the watch resumes from the
// hub's position, so the subscribers miss nothing. Only the first time, or
// after a break on a compacted revision, does it read the EVERY_NODE tasks
// and start again at the current revision; the subscribers, which would
// miss the events in between, are then ended with UNAVAILABLE and their
// cursors (a reconnect from one gets OUT_OF_RANGE if it was compacted).
func (h *Hub) list(ctx context.Context) (int64, error) {
	h.mu.Lock()
	pos, gap := h.pos.Load(), h.gap
	h.mu.Unlock()
	if pos != 0 && !gap {
		return pos, nil
	}
	cctx, cancel := h.etcdCtx(ctx)
	resp, err := h.cfg.Client.Get(cctx, h.keys.AllEvery(), clientv3.WithPrefix())
	cancel()
	if err != nil {
		return 0, err
	}
	der := h.newDeriver()
	for _, kv := range resp.Kvs {
		der.noteEvery(kv)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.der = der
	if pos != 0 {
		for s := range h.subs {
			s.finish(errEventGap)
			delete(h.subs, s)
		}
		h.cfg.Logger.Warn("event watch resumed past a compacted revision; the event streams were ended", "from", pos, "to", resp.Header.Revision)
	}
	h.gap = false
	h.pos.Store(resp.Header.Revision)
	select {
	case <-h.ready:
	default:
		close(h.ready)
	}
	return resp.Header.Revision, nil
}

// events derives one watch response's events once and offers each
// revision's to every subscriber, without ever waiting for one. With no
// subscriber it derives nothing (that is most of a busy node's writes'
// decoding): it keeps only what later derivations need and moves its
// position on, under mu, so a stream that joins after sees it there.
func (h *Hub) events(_ context.Context, wes []*clientv3.Event) {
	if len(wes) == 0 {
		return
	}
	h.mu.Lock()
	idle := len(h.subs) == 0
	h.mu.Unlock()
	if idle {
		h.der.note(wes)
		h.mu.Lock()
		idle = len(h.subs) == 0
		if idle {
			h.pos.Store(wes[len(wes)-1].Kv.ModRevision)
		}
		h.mu.Unlock()
		if idle {
			return
		}
		// A stream joined meanwhile, at the old position: derive for it.
	}
	var revs []revEvents
	h.der.revisions(wes, func(re revEvents) bool { revs = append(revs, re); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, re := range revs {
		for s := range h.subs {
			if !s.offerLive(re) {
				delete(h.subs, s)
			}
		}
		h.pos.Store(re.rev)
	}
}

// waitReady waits for the hub's first list, ctx, or its stop.
func (h *Hub) waitReady(ctx context.Context) error {
	select {
	case <-h.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-h.cfg.Life.Done():
		return errStreamStopping
	}
}

// join adds s to the hub, which offers it every revision after the hub's
// position P from then on, if the stream has delivered everything up to
// P: delivered is its place in the stream (every event up to it was
// offered to s). joined says whether s was added and at is P. Otherwise,
// with hold, s is added in its catch-up state (the hub's offers wait in
// held) and its catch-up delivers the revisions up to at; without hold
// nothing changes. A stopped hub refuses.
func (h *Hub) join(s *subscriber, delivered pos, hold bool) (joined, caught bool, at int64, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || h.cfg.Life.Err() != nil {
		return false, false, 0, errStreamStopping
	}
	at = h.pos.Load()
	caught = delivered.rev > at || delivered.rev == at && delivered.idx == maxIdx
	switch {
	case caught:
		s.startLive(delivered)
	case hold:
		s.startCatchUp()
	default:
		return false, false, at, nil
	}
	h.subs[s] = struct{}{}
	return true, caught, at, nil
}

// unsubscribe removes s (a stream that ended).
func (h *Hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// Subscribers counts the streams the Hub's watch feeds now (a stream still
// catching up from an old cursor joins it later); for tests and stats.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// stop ends every subscriber (UNAVAILABLE with its cursor) and refuses new
// ones.
func (h *Hub) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	for s := range h.subs {
		s.finish(errStreamStopping)
		delete(h.subs, s)
	}
}

package taskservice

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/etcdwatch"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The event hub is the node's one etcd watch of the event stream: it
// watches the whole key prefix with previous values, derives each
// revision's events once (eventdiff.go), and offers them to every
// WatchEvents stream of the node (its subscribers, eventsub.go). It never
// waits for a subscriber: one whose buffer is full is ended instead
// (RESOURCE_EXHAUSTED with the cursor to resume from), so the hub reads
// its watch as fast as etcd sends it and etcd's client, which buffers a
// watch's responses without limit, holds next to nothing.
//
// Until this release every stream had a watch of its own, fed at its
// reader's pace: a reader that stopped reading made etcd's client buffer
// every write of the cluster for it (216 MiB after 42 MB of writes).

// sizedEvent is one derived event with its encoded size, both computed
// once for every subscriber.
type sizedEvent struct {
	ev   *taskdv1.Event
	idx  int // within its revision: the second half of its cursor
	size int
}

// revEvents are the events of one etcd revision, in order.
type revEvents struct {
	rev int64
	evs []sizedEvent
}

// eventDeriver turns watched writes into events with their cursors, keeping
// what the derivation needs between writes: each EVERY_NODE task's identity
// and kind.
type eventDeriver struct {
	n     *Node
	every map[string][2]string
}

func newEventDeriver(n *Node) *eventDeriver {
	return &eventDeriver{n: n, every: map[string][2]string{}}
}

// revisions groups one watch response's writes by revision and derives
// each revision's events; fn is called for every revision in order (also
// for one whose writes make no event) and stops the walk by returning
// false. etcd sends all of a revision's writes in one response (a watch
// without WithFragment), so a revision's event indexes start at 0 here.
func (d *eventDeriver) revisions(wes []*clientv3.Event, fn func(revEvents) bool) bool {
	for i := 0; i < len(wes); {
		rev := wes[i].Kv.ModRevision
		re := revEvents{rev: rev}
		for ; i < len(wes) && wes[i].Kv.ModRevision == rev; i++ {
			for _, e := range d.n.derive(wes[i], d.every) {
				idx := len(re.evs)
				e.Cursor = formatCursor(rev, idx)
				re.evs = append(re.evs, sizedEvent{ev: e, idx: idx, size: proto.Size(e)})
			}
		}
		if !fn(re) {
			return false
		}
	}
	return true
}

// note keeps what deriving later writes needs from wes without deriving
// their events: the identity and kind of each EVERY_NODE task stored.
func (d *eventDeriver) note(wes []*clientv3.Event) {
	every := d.n.keys.AllEvery()
	for _, we := range wes {
		if we.Type == clientv3.EventTypePut && strings.HasPrefix(string(we.Kv.Key), every) {
			d.n.noteEvery(d.every, we.Kv)
		}
	}
}

// eventHub is the node's one watch of the event stream and its
// subscribers.
type eventHub struct {
	n *Node
	// pos is the hub's position: every revision up to it has been offered
	// to the subscribers (zero until the first list). Written under mu.
	pos atomic.Int64
	// streams counts the WatchEvents streams open, joined or catching up,
	// against Config.MaxEventStreams.
	streams atomic.Int64

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	gap     bool          // the watch broke on a compacted revision: the events after pos are lost
	ready   chan struct{} // closed by the first list
	stopped bool
	der     *eventDeriver // used by the hub's goroutine only
}

func newEventHub(n *Node) *eventHub {
	return &eventHub{n: n, subs: map[*subscriber]struct{}{}, ready: make(chan struct{}), der: newEventDeriver(n)}
}

// run follows the prefix until ctx ends, then ends every subscriber with
// UNAVAILABLE and its cursor.
func (h *eventHub) run(ctx context.Context) {
	f := etcdwatch.Follower{
		Client:  h.n.cli,
		Key:     h.n.cfg.Prefix,
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
			h.n.log.Debug("event watch broken; resuming", "error", err)
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
func (h *eventHub) list(ctx context.Context) (int64, error) {
	h.mu.Lock()
	pos, gap := h.pos.Load(), h.gap
	h.mu.Unlock()
	if pos != 0 && !gap {
		return pos, nil
	}
	cctx, cancel := h.n.etcdCtx(ctx)
	resp, err := h.n.cli.Get(cctx, h.n.keys.AllEvery(), clientv3.WithPrefix())
	cancel()
	if err != nil {
		return 0, err
	}
	der := newEventDeriver(h.n)
	for _, kv := range resp.Kvs {
		h.n.noteEvery(der.every, kv)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.der = der
	if pos != 0 {
		for s := range h.subs {
			s.finish(errEventGap)
			delete(h.subs, s)
		}
		h.n.log.Warn("event watch resumed past a compacted revision; the event streams were ended", "from", pos, "to", resp.Header.Revision)
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
func (h *eventHub) events(_ context.Context, wes []*clientv3.Event) {
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
func (h *eventHub) waitReady(ctx context.Context) error {
	select {
	case <-h.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-h.n.life.Done():
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
func (h *eventHub) join(s *subscriber, delivered pos, hold bool) (joined, caught bool, at int64, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || h.n.life.Err() != nil {
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
func (h *eventHub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// subscribers counts the subscribers (for tests and stats).
func (h *eventHub) subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// stop ends every subscriber (UNAVAILABLE with its cursor) and refuses new
// ones.
func (h *eventHub) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	for s := range h.subs {
		s.finish(errStreamStopping)
		delete(h.subs, s)
	}
}

// EventStreams counts the WatchEvents streams the node's event watch
// feeds now (a stream still catching up from an old cursor joins it
// later).
func (n *Node) EventStreams() int { return n.hub.subscribers() }

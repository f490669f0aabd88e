package eventhub

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdwatch"
)

// A stream that starts from a cursor behind the hub first reads the
// history after its cursor with a watch of its own (with previous values,
// from the cursor's revision), then joins the hub. The catch-up is paced
// by its reader without ever letting etcd's client buffer for it: it
// reads its watch as fast as etcd sends, and when the stream's buffer has
// no room for a revision it cancels the watch, waits until the stream has
// sent what it holds, and watches again from that revision.
//
// The join: once the catch-up has delivered the revision the hub was at
// when the stream began, it joins the hub (Hub.join). If the hub is
// no further than the catch-up, the stream is live at once and the hub's
// offers skip what the catch-up delivered. Otherwise the hub's offers after
// its position P wait in the stream's held buffer while the catch-up
// delivers up to P; then they follow. Each revision therefore comes from
// exactly one of the two, in order.

// errCatchUpPaused stops a catch-up watch whose stream has no room.
var errCatchUpPaused = errors.New("catch-up paused")

// catchUp delivers the revisions after from to s until it has joined the
// hub, s ends, or ctx ends. p0 is the hub's position when the stream
// began. It ends s with ErrCursorExpired when the history it needs was
// compacted.
func (h *Hub) catchUp(ctx context.Context, s *subscriber, from pos, p0 int64, cursor string) {
	der := h.newDeriver()
	// Which identity and kind each EVERY_NODE task had, for the events of
	// the nodes' progress records (which name the task only).
	cctx, cancel := h.etcdCtx(ctx)
	resp, err := h.cfg.Client.Get(cctx, h.keys.AllEvery(), clientv3.WithPrefix(), clientv3.WithRev(from.rev-1))
	cancel()
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		s.finish(fmt.Errorf("cursor %s: %w", cursor, ErrCursorExpired))
		return
	case errors.Is(err, rpctypes.ErrFutureRev):
	case err != nil:
		s.finish(err)
		return
	default:
		for _, kv := range resp.Kvs {
			der.noteEvery(kv)
		}
	}
	next := from.rev // the first revision not delivered yet
	joinedAt := int64(-1)
	for ctx.Err() == nil {
		wctx, stop := context.WithCancelCause(ctx)
		done := false
		f := etcdwatch.Follower{
			Client:  h.cfg.Client,
			Key:     h.cfg.Prefix,
			Options: []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV()},
			FromRev: next - 1,
			// After a break the watch resumes where the catch-up is.
			List: func(context.Context) (int64, error) { return next - 1, nil },
			Broken: func(err error) {
				if errors.Is(err, rpctypes.ErrCompacted) {
					s.finish(fmt.Errorf("cursor %s (history compacted): %w", cursor, ErrCursorExpired))
					stop(err)
				}
			},
			Events: func(_ context.Context, wes []*clientv3.Event) {
				if context.Cause(wctx) != nil {
					return // stopped; what etcd still sends is read again later
				}
				der.revisions(wes, func(re revEvents) bool {
					if joinedAt >= 0 && re.rev > joinedAt {
						s.caughtUp()
						done = true
						stop(nil)
						return false
					}
					ok, ended := s.offerCatchUp(re)
					if ended {
						done = true
						stop(nil)
						return false
					}
					if !ok {
						stop(errCatchUpPaused)
						return false
					}
					next = re.rev + 1
					switch {
					case joinedAt >= 0 && re.rev == joinedAt:
						s.caughtUp()
						done = true
					case joinedAt < 0 && re.rev >= p0:
						joined, caught, at, err := h.join(s, pos{re.rev, maxIdx}, true)
						if err != nil {
							s.finish(err)
							done = true
						} else if joined && caught {
							done = true
						} else {
							joinedAt = at
						}
					}
					if done {
						stop(nil)
						return false
					}
					return true
				})
			},
		}
		f.Run(wctx)
		if done || s.ended() || ctx.Err() != nil {
			return
		}
		if !errors.Is(context.Cause(wctx), errCatchUpPaused) {
			return
		}
		// Wait until the stream has sent what it holds.
		for !s.drained() {
			select {
			case <-s.room:
			case <-ctx.Done():
				return
			}
		}
	}
}

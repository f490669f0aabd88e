package eventhub

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Filter selects the events a stream sends; empty fields match all.
type Filter struct {
	Identity string
	TaskID   string
	Kind     string
	Node     string
	Types    []taskdv1.EventType
}

func (f Filter) match(e *taskdv1.Event) bool {
	return (f.Identity == "" || e.Identity == f.Identity) &&
		(f.TaskID == "" || e.TaskId == f.TaskID) &&
		(f.Kind == "" || e.Kind == f.Kind) &&
		(f.Node == "" || e.Node == f.Node) &&
		(len(f.Types) == 0 || slices.Contains(f.Types, e.Type))
}

// Cursors are "<revision>.<index>": the etcd revision of the write an
// event comes from and its place among that revision's events.
func formatCursor(rev int64, idx int) string { return fmt.Sprintf("%d.%d", rev, idx) }

func parseCursor(c string) (rev int64, idx int, err error) {
	r, i, ok := strings.Cut(c, ".")
	if ok {
		rev, err = strconv.ParseInt(r, 10, 64)
		if err == nil {
			idx, err = strconv.Atoi(i)
		}
	}
	if !ok || err != nil || rev <= 0 || idx < 0 {
		return 0, 0, fmt.Errorf("%q is %w", c, ErrInvalidCursor)
	}
	return rev, idx, nil
}

// Watch streams the events matching f to send, in etcd revision order (so
// in order for each task), from the event after cursor on (empty: from
// now), until ctx ends or send fails. send must not modify the events
// (other streams share them). A cursor that is none gives
// ErrInvalidCursor; one older than etcd's retained history,
// ErrCursorExpired; a stream past Config.MaxStreams, ErrTooManyStreams.
//
// The stream holds at most Config.Buffer bytes of events for its reader:
// one that falls further behind is ended with a *StreamEndError
// (ErrReaderBehind) naming the cursor to resume from; a Hub that stops
// ends its streams the same way (ErrStreamInterrupted).
func (h *Hub) Watch(ctx context.Context, f Filter, cursor string, send func([]*taskdv1.Event) error) error {
	if h.streams.Add(1) > int64(h.cfg.MaxStreams) {
		h.streams.Add(-1)
		return fmt.Errorf("%w: %d", ErrTooManyStreams, h.cfg.MaxStreams)
	}
	defer h.streams.Add(-1)
	var from pos
	if cursor == "" {
		cctx, cancel := h.etcdCtx(ctx)
		resp, err := h.cfg.Client.Get(cctx, h.keys.AllEvery(), clientv3.WithPrefix(), clientv3.WithCountOnly())
		cancel()
		if err != nil {
			return err
		}
		from = pos{resp.Header.Revision, maxIdx}
		cursor = formatCursor(from.rev, from.idx)
	} else {
		rev, idx, err := parseCursor(cursor)
		if err != nil {
			return err
		}
		from = pos{rev, idx}
	}
	if err := h.waitReady(ctx); err != nil {
		return endError(err, cursor)
	}
	s := newSubscriber(f, h.cfg.Buffer, from, cursor)
	defer h.unsubscribe(s)
	joined, _, p0, err := h.join(s, from, false)
	if err != nil {
		return endError(err, cursor)
	}
	if !joined {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.catchUp(cctx, s, from, p0, cursor)
		}()
		defer func() { cancel(); <-done }()
	}
	return s.serve(ctx, send)
}

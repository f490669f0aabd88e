package taskservice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// ErrCursorExpired reports a WatchEvents cursor older than the cluster's
// event retention: etcd has compacted the history it points into
// (OUT_OF_RANGE). Start again without a cursor.
var ErrCursorExpired = errors.New("the cursor is older than the event retention window")

// EventFilter selects the events WatchEvents streams; empty fields match
// all.
type EventFilter struct {
	Identity string
	TaskID   string
	Kind     string
	Node     string
	Types    []taskdv1.EventType
}

func (f EventFilter) match(e *taskdv1.Event) bool {
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
		return 0, 0, invalid("cursor", "%q is not a cursor from an earlier event", c)
	}
	return rev, idx, nil
}

// WatchEvents streams the events matching f to send, in etcd revision
// order (so in order for each task), from the event after cursor on (empty:
// from now), until ctx ends or send fails. Every node serves every event of
// the cluster: the events are derived from the writes of the records
// themselves (eventdiff.go), by the node's one watch (eventhub.go), and
// send must not modify them (other streams share them). A cursor older
// than etcd's retained history gives ErrCursorExpired.
//
// The stream holds at most Config.EventBuffer bytes of events for its
// reader: one that falls further behind is ended with a *StreamEndError
// (ErrReaderBehind) naming the cursor to resume from; a node that stops
// ends its streams the same way (ErrStreamInterrupted).
func (n *Node) WatchEvents(ctx context.Context, f EventFilter, cursor string, send func([]*taskdv1.Event) error) error {
	if n.hub.streams.Add(1) > int64(n.cfg.MaxEventStreams) {
		n.hub.streams.Add(-1)
		return fmt.Errorf("%w: %d", ErrTooManyStreams, n.cfg.MaxEventStreams)
	}
	defer n.hub.streams.Add(-1)
	var from pos
	if cursor == "" {
		cctx, cancel := n.etcdCtx(ctx)
		resp, err := n.cli.Get(cctx, n.keys.AllEvery(), clientv3.WithPrefix(), clientv3.WithCountOnly())
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
	if err := n.hub.waitReady(ctx); err != nil {
		return endError(err, cursor)
	}
	s := newSubscriber(f, n.cfg.EventBuffer, from, cursor)
	defer n.hub.unsubscribe(s)
	joined, _, p0, err := n.hub.join(s, from, false)
	if err != nil {
		return endError(err, cursor)
	}
	if !joined {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			n.catchUp(cctx, s, from, p0, cursor)
		}()
		defer func() { cancel(); <-done }()
	}
	return s.serve(ctx, send)
}

// noteEvery remembers an EVERY_NODE task's identity and kind.
func (n *Node) noteEvery(every map[string][2]string, kv *mvccpb.KeyValue) {
	id, taskID, err := n.keys.SplitEvery(string(kv.Key))
	if err != nil {
		return
	}
	if rec, err := pending.Decode(kv.Value); err == nil {
		every[taskID] = [2]string{id, rec.GetSpec().GetKind()}
	}
}

// derive returns the events one write stands for.
func (n *Node) derive(we *clientv3.Event, every map[string][2]string) []*taskdv1.Event {
	key := string(we.Kv.Key)
	var cur, prev []byte
	if we.Type == clientv3.EventTypePut {
		cur = we.Kv.Value
	}
	if we.PrevKv != nil {
		prev = we.PrevKv.Value
	}
	rest := strings.TrimPrefix(key, n.cfg.Prefix)
	switch {
	case strings.HasPrefix(rest, "task/"), strings.HasPrefix(rest, "every/"):
		isEvery := strings.HasPrefix(rest, "every/")
		split := n.keys.SplitTask
		if isEvery {
			split = n.keys.SplitEvery
			if cur != nil {
				n.noteEvery(every, we.Kv)
			}
		}
		id, taskID, err := split(key)
		if err != nil {
			return nil
		}
		c, p := decodeOrNil(cur), decodeOrNil(prev)
		kind := c.GetSpec().GetKind()
		if c == nil {
			kind = p.GetSpec().GetKind()
		}
		return taskEvents(recordView(p), recordView(c), &taskdv1.Event{Identity: id, TaskId: taskID, Kind: kind}, we.Kv.ModRevision, false)
	case strings.HasPrefix(rest, "everynode/"):
		node, taskID, ok := strings.Cut(strings.TrimPrefix(rest, "everynode/"), "/")
		if !ok {
			return nil
		}
		who := every[taskID]
		return taskEvents(progressOrNil(prev), progressOrNil(cur),
			&taskdv1.Event{Identity: who[0], TaskId: taskID, Kind: who[1], Node: node}, we.Kv.ModRevision, true)
	case strings.HasPrefix(rest, "map/"):
		id, err := identity.Decode(strings.TrimPrefix(rest, "map/"))
		if err != nil || cur == nil || prev == nil {
			return nil
		}
		var was, now storev1.Mapping
		if proto.Unmarshal(prev, &was) != nil || proto.Unmarshal(cur, &now) != nil || was.Node == now.Node {
			return nil
		}
		return []*taskdv1.Event{{Type: taskdv1.EventType_EVENT_TYPE_MOVED, Time: timestamppb.Now(), Identity: id,
			Node: now.Node, Message: "from " + was.Node, Trigger: -1}}
	case strings.HasPrefix(rest, "handoff/"):
		if we.Type != clientv3.EventTypeDelete || prev == nil {
			return nil
		}
		node, _, _ := strings.Cut(strings.TrimPrefix(rest, "handoff/"), "/")
		var h storev1.HandoffEntry
		if proto.Unmarshal(prev, &h) != nil || h.TaskId != "*" {
			return nil // a task-level entry tells an owner of a change; not a handoff
		}
		return []*taskdv1.Event{{Type: taskdv1.EventType_EVENT_TYPE_HANDED_OFF, Time: timestamppb.Now(), Identity: h.Identity,
			Node: node, Message: "from " + h.From, Trigger: -1}}
	case strings.HasPrefix(rest, "pause/"):
		id, kind, err := n.keys.SplitPause(key)
		if err != nil {
			return nil
		}
		e := &taskdv1.Event{Type: taskdv1.EventType_EVENT_TYPE_PAUSED, Time: timestamppb.Now(), Identity: id, Kind: kind, Trigger: -1}
		if cur == nil {
			e.Type = taskdv1.EventType_EVENT_TYPE_RESUMED
		} else if prev != nil {
			return nil // rewritten, still paused
		}
		return []*taskdv1.Event{e}
	}
	return nil
}

func decodeOrNil(b []byte) *storev1.TaskRecord {
	if b == nil {
		return nil
	}
	rec, err := pending.Decode(b)
	if err != nil {
		return nil
	}
	return rec
}

func progressOrNil(b []byte) *runView {
	if b == nil {
		return nil
	}
	p := &storev1.EveryNodeProgress{}
	if proto.Unmarshal(b, p) != nil {
		return nil
	}
	return progressView(p)
}

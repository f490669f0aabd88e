package eventhub

import (
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

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

// deriver turns watched writes into events with their cursors, keeping
// what the derivation needs between writes: each EVERY_NODE task's identity
// and kind. A deriver is used by one goroutine (the Hub's, or one
// catch-up's).
type deriver struct {
	keys  keyspace.Keys
	every map[string]everyTask // by task id
}

func (h *Hub) newDeriver() *deriver {
	return &deriver{keys: h.keys, every: map[string]everyTask{}}
}

// revisions groups one watch response's writes by revision and derives
// each revision's events; fn is called for every revision in order (also
// for one whose writes make no event) and stops the walk by returning
// false. etcd sends all of a revision's writes in one response (a watch
// without WithFragment), so a revision's event indexes start at 0 here.
func (d *deriver) revisions(wes []*clientv3.Event, fn func(revEvents) bool) bool {
	for i := 0; i < len(wes); {
		rev := wes[i].Kv.ModRevision
		re := revEvents{rev: rev}
		for ; i < len(wes) && wes[i].Kv.ModRevision == rev; i++ {
			for _, e := range d.derive(wes[i]) {
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
func (d *deriver) note(wes []*clientv3.Event) {
	every := d.keys.AllEvery()
	for _, we := range wes {
		if we.Type == clientv3.EventTypePut && strings.HasPrefix(string(we.Kv.Key), every) {
			d.noteEvery(we.Kv)
		}
	}
}

// noteEvery remembers an EVERY_NODE task's identity and kind.
func (d *deriver) noteEvery(kv *mvccpb.KeyValue) {
	id, taskID, err := d.keys.SplitEvery(string(kv.Key))
	if err != nil {
		return
	}
	if rec, err := pending.Decode(kv.Value); err == nil {
		d.every[taskID] = everyTask{identity: id, kind: rec.GetSpec().GetKind(), triggers: rec.GetSpec().GetTriggers()}
	}
}

// derive returns the events one write stands for.
func (d *deriver) derive(we *clientv3.Event) []*taskdv1.Event {
	key := string(we.Kv.Key)
	var cur, prev []byte
	if we.Type == clientv3.EventTypePut {
		cur = we.Kv.Value
	}
	if we.PrevKv != nil {
		prev = we.PrevKv.Value
	}
	switch {
	case strings.HasPrefix(key, d.keys.AllTasks()), strings.HasPrefix(key, d.keys.AllEvery()):
		isEvery := strings.HasPrefix(key, d.keys.AllEvery())
		split := d.keys.SplitTask
		if isEvery {
			split = d.keys.SplitEvery
			if cur != nil {
				d.noteEvery(we.Kv)
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
	case strings.HasPrefix(key, d.keys.AllEveryProgress()):
		node, taskID, ok := strings.Cut(strings.TrimPrefix(key, d.keys.AllEveryProgress()), "/")
		if !ok {
			return nil
		}
		who := d.every[taskID]
		return taskEvents(progressOrNil(prev, taskID, who.triggers), progressOrNil(cur, taskID, who.triggers),
			&taskdv1.Event{Identity: who.identity, TaskId: taskID, Kind: who.kind, Node: node}, we.Kv.ModRevision, true)
	case strings.HasPrefix(key, d.keys.Mappings()):
		id, err := d.keys.SplitMapping(key)
		if err != nil || cur == nil || prev == nil {
			return nil
		}
		var was, now storev1.Mapping
		if proto.Unmarshal(prev, &was) != nil || proto.Unmarshal(cur, &now) != nil || was.Node == now.Node {
			return nil
		}
		return []*taskdv1.Event{{Type: taskdv1.EventType_EVENT_TYPE_MOVED, Time: timestamppb.Now(), Identity: id,
			Node: now.Node, Message: "from " + was.Node, Trigger: -1}}
	case strings.HasPrefix(key, d.keys.Handoffs()):
		if we.Type != clientv3.EventTypeDelete || prev == nil {
			return nil
		}
		node, _, _ := strings.Cut(strings.TrimPrefix(key, d.keys.Handoffs()), "/")
		var h storev1.HandoffEntry
		if proto.Unmarshal(prev, &h) != nil || h.TaskId != "*" {
			return nil // a task-level entry tells an owner of a change; not a handoff
		}
		return []*taskdv1.Event{{Type: taskdv1.EventType_EVENT_TYPE_HANDED_OFF, Time: timestamppb.Now(), Identity: h.Identity,
			Node: node, Message: "from " + h.From, Trigger: -1}}
	case strings.HasPrefix(key, d.keys.Pauses()):
		id, kind, err := d.keys.SplitPause(key)
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

func progressOrNil(b []byte, taskID string, triggers []*taskdv1.Trigger) *runView {
	if b == nil {
		return nil
	}
	p := &storev1.EveryNodeProgress{}
	if proto.Unmarshal(b, p) != nil {
		return nil
	}
	return progressView(p, taskID, triggers)
}

// everyTask is what the deriver keeps of an EVERY_NODE task stored, for
// the events of the nodes' progress on it.
type everyTask struct {
	identity, kind string
	triggers       []*taskdv1.Trigger // their jitter delays the next fire times told
}

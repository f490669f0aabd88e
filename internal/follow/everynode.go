package follow

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// EveryTask is an EVERY_NODE task as an EveryNode read it: the shared
// record, decoded, and when read with it this node's progress on it.
type EveryTask struct {
	Identity string
	Shared   *storev1.TaskRecord
	Rev      int64 // the shared record's mod revision
	// WithProgress says the task was read together with this node's
	// progress (a list, Reload): Progress is then the progress stored (nil
	// for none, or for one that does not decode, which is logged) and
	// ProgressRev its mod revision (0 for none). A task the watch brings,
	// or Learn is told, comes without: the node keeps the progress it has.
	WithProgress bool
	Progress     *storev1.EveryNodeProgress
	ProgressRev  int64
}

// OnEveryNode is what an EveryNode tells the node; any may be nil. Each is
// called from the goroutine that read the change (Run's, or the caller of
// Load, Reload or Learn), with no lock of the EveryNode held.
type OnEveryNode struct {
	// Put: a task stored or changed. A shared record that does not decode
	// is logged and not handed over.
	Put func(EveryTask)
	// Deleted: a task deleted (the watch), or gone when Reload read it.
	Deleted func(identity, taskID string)
	// Listed: a list (Load, the list after a broken watch) has handed over
	// every task it read (Put, each with this node's progress); stored
	// holds the ids of every task key it read, those that did not decode
	// included. The node drops the tasks it knows that are not in it.
	Listed func(stored map[string]bool)
}

// EveryNode follows the EVERY_NODE tasks of the cluster
// (keyspace.Keys.AllEvery) and reads them with one node's progress on each
// (keyspace.Keys.EveryProgressOf). It keeps no copy: it decodes what it
// reads and hands it to the node, whose entries hold them. The watch
// follows the shared records only: a node's progress is written by that
// node alone, which knows it, and read again by each list and by Reload.
type EveryNode struct {
	w    Watch
	node string
	on   OnEveryNode
	read func(ctx context.Context, gets ...clientv3.Op) (*clientv3.TxnResponse, error)

	follow *prefixFollower
}

// NewEveryNode returns the follower of the EVERY_NODE tasks and of node's
// progress on them.
func NewEveryNode(w Watch, node string, on OnEveryNode) *EveryNode {
	e := &EveryNode{w: w, node: node, on: on, read: writepath.NewWriter(w.Client).Read}
	e.follow = &prefixFollower{w: w, what: "EVERY_NODE tasks", prefix: w.Keys.AllEvery(), list: e.list, events: e.events}
	return e
}

// Load reads every EVERY_NODE task and this node's progress on each, at
// one revision, and hands them to the node (Put each, then Listed). Run
// watches after it.
func (e *EveryNode) Load(ctx context.Context) error { return e.follow.load(ctx) }

// Run follows the EVERY_NODE tasks until ctx ends, from the revision of
// the last Load (listing first if there was none); after a break of the
// watch it lists them all again, with the progress.
func (e *EveryNode) Run(ctx context.Context) { e.follow.run(ctx) }

// events hands the node the tasks of one watch response.
func (e *EveryNode) events(_ context.Context, evs []*clientv3.Event) {
	keyEvents(evs, e.w.Keys.SplitEvery, e.deleted, func(id, _ string, kv *mvccpb.KeyValue) {
		if t, ok := e.decode(id, kv.Value, kv.ModRevision); ok {
			e.put(t)
		}
	})
}

// Learn hands the node a task it stored or changed itself (value and rev
// as written), decoded as the watch would bring it, before the watch does.
func (e *EveryNode) Learn(id string, value []byte, rev int64) {
	if t, ok := e.decode(id, value, rev); ok {
		e.put(t)
	}
}

// Reload reads task taskID of identity id and this node's progress on it
// again, and hands it to the node: Put with the progress, or Deleted if the
// task is gone. The node calls it after a start write that failed, so that
// a marker the write left after all is seen (and resolved) rather than
// written over. A read that fails hands nothing over (the node's next
// fenced write fails, and it reloads again). ctx bounds it, with the
// Watch's EtcdTimeout.
func (e *EveryNode) Reload(ctx context.Context, id, taskID string) {
	cctx, cancel := e.w.etcdCtx(ctx)
	defer cancel()
	resp, err := e.read(cctx,
		clientv3.OpGet(e.w.Keys.Every(id, taskID)),
		clientv3.OpGet(e.w.Keys.EveryProgress(e.node, taskID)),
	)
	if err != nil {
		return
	}
	shared := resp.Responses[0].GetResponseRange().GetKvs()
	if len(shared) == 0 {
		e.deleted(id, taskID)
		return
	}
	var prog *mvccpb.KeyValue
	if kvs := resp.Responses[1].GetResponseRange().GetKvs(); len(kvs) > 0 {
		prog = kvs[0]
	}
	if t, ok := e.decode(id, shared[0].Value, shared[0].ModRevision); ok {
		e.withProgress(&t, prog)
		e.put(t)
	}
}

// list is Load, returning the revision it read at (etcdwatch's List).
func (e *EveryNode) list(ctx context.Context) (int64, error) {
	cctx, cancel := e.w.etcdCtx(ctx)
	defer cancel()
	progPrefix := e.w.Keys.EveryProgressOf(e.node)
	resp, err := e.read(cctx,
		clientv3.OpGet(e.w.Keys.AllEvery(), clientv3.WithPrefix()),
		clientv3.OpGet(progPrefix, clientv3.WithPrefix()),
	)
	if err != nil {
		return 0, fmt.Errorf("load EVERY_NODE tasks: %w", err)
	}
	progs := map[string]*mvccpb.KeyValue{}
	for _, kv := range resp.Responses[1].GetResponseRange().GetKvs() {
		progs[string(kv.Key[len(progPrefix):])] = kv
	}
	stored := map[string]bool{}
	for _, kv := range resp.Responses[0].GetResponseRange().GetKvs() {
		id, taskID, err := e.w.Keys.SplitEvery(string(kv.Key))
		if err != nil {
			continue
		}
		stored[taskID] = true
		if t, ok := e.decode(id, kv.Value, kv.ModRevision); ok {
			e.withProgress(&t, progs[taskID])
			e.put(t)
		}
	}
	if e.on.Listed != nil {
		e.on.Listed(stored)
	}
	return resp.Header.Revision, nil
}

// decode decodes a shared record read at rev; one that does not decode
// is logged.
func (e *EveryNode) decode(id string, value []byte, rev int64) (EveryTask, bool) {
	shared, err := pending.Decode(value)
	if err != nil {
		e.w.Logger.Error("bad EVERY_NODE task", "identity", id, "error", err)
		return EveryTask{}, false
	}
	return EveryTask{Identity: id, Shared: shared, Rev: rev}, true
}

// withProgress adds this node's progress as read (kv; nil for none) to t.
func (e *EveryNode) withProgress(t *EveryTask, kv *mvccpb.KeyValue) {
	t.WithProgress = true
	if kv == nil {
		return
	}
	prog := &storev1.EveryNodeProgress{}
	if err := proto.Unmarshal(kv.Value, prog); err != nil {
		e.w.Logger.Error("bad EVERY_NODE progress", "task", t.Shared.Id, "error", err)
		prog = nil
	}
	t.Progress, t.ProgressRev = prog, kv.ModRevision
}

func (e *EveryNode) put(t EveryTask) {
	if e.on.Put != nil {
		e.on.Put(t)
	}
}

func (e *EveryNode) deleted(id, taskID string) {
	if e.on.Deleted != nil {
		e.on.Deleted(id, taskID)
	}
}

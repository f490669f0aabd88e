// Package taskapi answers the requests that change and read the cluster's
// tasks, calendars and pauses, on any node: Schedule, Get, List, Update,
// EditTriggers, Cancel, RunNow, Delete, the pauses, the calendars, the
// identities and nodes, MoveIdentity and PreviewTriggers. Each request reads
// etcd and writes through the write path (internal/writepath), fenced as
// contract §3.6 says; the node's engine, which runs the tasks this node
// owns, is told what changed through Engine, and answers what only it
// knows (which identities it holds, what a due run waits for).
//
// pkg/taskservice's Node exposes these as its methods, with the contract
// each keeps in its doc comment.
//
// Lock: Service.mu guards two caches only (the owners of identities on
// other nodes, the cluster's kinds); it is never held across a call to
// etcd or into the Engine.
package taskapi

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/singleflight"

	"github.com/taskd/taskd/internal/follow"
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/localrefs"
	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/internal/taskspec"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Config is what a Service works with: the node's identity, its view of
// etcd and its followers. Every field is required.
type Config struct {
	Name        string // the node's name
	Incarnation string // the node's incarnation
	EtcdTimeout time.Duration
	MaxTxnOps   int
	MaxPayload  int // --max-payload, for the checks of a spec

	Client    *clientv3.Client
	Keys      keyspace.Keys
	Store     *pending.Store
	Map       *identity.Map
	IDs       *pending.IDSource
	Shapes    writepath.Shapes
	Writer    writepath.Writer // lone Txns (a change, a calendar, a pause)
	Batch     *writepath.Batcher
	Cluster   placement.Cluster
	Calendars *follow.Calendars
	Pauses    *follow.Pauses
	EveryNode *follow.EveryNode
	LocalRefs *localrefs.Refs
	// TraceParent is the W3C traceparent of ctx's span ("" for none),
	// stored with each scheduled task so that its runs link to it.
	TraceParent func(ctx context.Context) string

	Engine Engine
	Logger hclog.Logger
}

// Engine is the node's side of a request: what only the node that runs
// the tasks knows, and the changes it must make when a request stored or
// removed a task. Its methods are quick and do not wait on etcd, except
// EveryDeleted, which deletes this node's progress on the task (best
// effort, bounded by the etcd timeout).
type Engine interface {
	// OwnedEpoch is the epoch under which this node holds identity id, if
	// it holds it (and has not lost it).
	OwnedEpoch(id string) (epoch int64, ok bool)
	// AddOwned queues tasks just stored of an identity mapped to this node
	// at epoch, written at revision rev.
	AddOwned(id string, epoch int64, recs []*storev1.TaskRecord, rev int64)
	// AddLocal queues a non-durable task.
	AddLocal(rec *storev1.TaskRecord)
	// Repair reads identity id again after (0: at once): a write whose
	// outcome is unknown may have stored a task it must run.
	Repair(id string, after time.Duration)
	// Knows says whether the node has identity id in its table, owned or
	// not (lost, being adopted).
	Knows(id string) bool
	// IdentityMoved tells the node that a failed fence proved its view of
	// id stale: cur is the mapping read since.
	IdentityMoved(id string, cur identity.Owner)
	// LocalTask is a copy of the non-durable task held here.
	LocalTask(id, taskID string) (*storev1.TaskRecord, bool)
	// LocalChanged puts a changed non-durable task in place.
	LocalChanged(id, taskID string, rec *storev1.TaskRecord)
	// StoredChanged puts a task change, stored at rev over the revision
	// readRev, in place if this node holds the task; applied is false when
	// its entry could not take it (it holds another revision).
	StoredChanged(id, taskID string, readRev int64, rec *storev1.TaskRecord, rev int64) (applied bool)
	// LocalDeleted, StoredDeleted and EveryDeleted drop a deleted task.
	LocalDeleted(id, taskID string)
	StoredDeleted(id, taskID string)
	EveryDeleted(id, taskID string)
	// Holds is what holds rec back on this node: pauses, a worker.
	Holds(rec *storev1.TaskRecord) Holds
	// Self is this node as a placement target, with its state.
	Self() *placement.Candidate
	// Kinds are the kinds this node handles (its handlers', its remote
	// workers'); ServesKind says whether it runs kind now or will (a
	// declared kind); HandlesKind whether a handler of its own does.
	Kinds() []string
	ServesKind(kind string) bool
	HandlesKind(kind string) bool
	// Announce tells the node's listeners of a change a request made.
	Announce(c Change, id, taskID, kind string)
}

// Holds is what holds a task back on this node.
type Holds struct {
	// PausedBy names the pauses in force over it: "task", "identity",
	// "kind".
	PausedBy []string
	// Waiting is what its due run waits for ("" for nothing), since when,
	// and why.
	Waiting       string
	WaitingSince  time.Time
	WaitingReason string
}

// Change is a change a request made that the node's listeners are told of.
type Change int

// The changes, each an event of the node (taskservice.EventCanceled...).
const (
	Canceled Change = iota + 1
	Paused
	Resumed
	Updated
)

// Service answers the task, calendar and pause requests of one node.
type Service struct {
	cfg Config
	log hclog.Logger

	mu           sync.Mutex
	remoteOwners map[string]identity.Owner // identities' owners on other nodes, a bounded cache
	kinds        map[string]bool           // the cluster's kinds, cached for a second
	kindsAt      time.Time
	kindsRead    singleflight.Group // one read of the nodes at a time refreshes kinds
}

// New returns the Service of a node.
func New(cfg Config) *Service {
	return &Service{cfg: cfg, log: cfg.Logger, remoteOwners: map[string]identity.Owner{}}
}

func (a *Service) etcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.cfg.EtcdTimeout)
}

// mine says whether owner is this node's incarnation.
func (a *Service) mine(owner identity.Owner) bool {
	return owner.Node == a.cfg.Name && owner.Incarnation == a.cfg.Incarnation
}

// ownerFence is the fence of a change by a node that may not own id: the
// mapping as read, and a handoff entry for its owner when that is another
// node (it reloads the task from its handoff area).
func (a *Service) ownerFence(id string, owner identity.Owner) *writepath.OwnerFence {
	of := &writepath.OwnerFence{Identity: id, Mapped: owner.Mapped, Epoch: owner.Epoch}
	if owner.Mapped && !a.mine(owner) {
		of.HandTo = owner.Node
	}
	return of
}

// ownerOf returns the owner of id: from memory when this node owns it;
// else, with read, from etcd (and remembered), without read a guess: the
// remembered owner or unmapped. A guess is only ever used behind a Txn
// compare that checks it.
func (a *Service) ownerOf(ctx context.Context, id string, read bool) (identity.Owner, error) {
	if epoch, ok := a.cfg.Engine.OwnedEpoch(id); ok {
		return identity.Owner{Identity: id, Mapped: true, Node: a.cfg.Name, Incarnation: a.cfg.Incarnation, Epoch: epoch}, nil
	}
	if !read {
		a.mu.Lock()
		o, ok := a.remoteOwners[id]
		a.mu.Unlock()
		if !ok {
			o = identity.Owner{Identity: id}
		}
		return o, nil
	}
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	o, err := a.cfg.Map.Get(cctx, id)
	if err == nil && o.Mapped && !a.mine(o) {
		a.mu.Lock()
		if len(a.remoteOwners) >= maxRemoteOwners {
			clear(a.remoteOwners) // a bounded cache: start again
		}
		a.remoteOwners[id] = o
		a.mu.Unlock()
	}
	return o, err
}

// maxRemoteOwners bounds the cache of identities' owners on other nodes.
const maxRemoteOwners = 1 << 16

// forgetOwner drops a cached ownership that a failed fence proved stale.
func (a *Service) forgetOwner(ctx context.Context, id string, owner identity.Owner) {
	if !a.mine(owner) {
		return
	}
	if !a.cfg.Engine.Knows(id) {
		return
	}
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	if cur, err := a.cfg.Map.Get(cctx, id); err == nil {
		a.cfg.Engine.IdentityMoved(id, cur)
	}
}

// placement picks the node for an unmapped identity: this node if it is
// RUNNING, else the least-loaded RUNNING node, else this node. The Txn
// that maps identities to it carries its registration compare
// (writepath.Schedule.Target).
func (a *Service) placement(ctx context.Context) (*placement.Candidate, error) {
	self := a.cfg.Engine.Self()
	if self.State == taskdv1.NodeState_NODE_STATE_RUNNING {
		return self, nil
	}
	cs, err := a.cfg.Cluster.Candidates(ctx)
	if err != nil {
		return nil, err
	}
	if live := placement.Running(cs, a.cfg.Name); len(live) > 0 {
		return placement.LeastLoaded(live), nil
	}
	return self, nil
}

// ForgetKinds drops the cached kinds of the cluster: a worker connected
// here, or left.
func (a *Service) ForgetKinds() {
	a.mu.Lock()
	a.kinds = nil
	a.mu.Unlock()
}

// clusterKinds is the set of kinds some registered node handles, cached
// for a second so scheduling does not read the node list every time;
// callers that find it stale together share one read.
func (a *Service) clusterKinds(ctx context.Context) map[string]bool {
	a.mu.Lock()
	kinds, at := a.kinds, a.kindsAt
	a.mu.Unlock()
	if kinds != nil && time.Since(at) < time.Second {
		return kinds
	}
	v, _, _ := a.kindsRead.Do("kinds", func() (any, error) {
		kinds := map[string]bool{}
		for _, k := range a.cfg.Engine.Kinds() {
			kinds[k] = true
		}
		nodes, err := a.ListNodes(ctx)
		if err != nil {
			return kinds, nil // etcd away: the write that follows will say so
		}
		for _, nd := range nodes {
			if nd.State == taskdv1.NodeState_NODE_STATE_STOPPED {
				continue
			}
			for _, k := range nd.Kinds {
				kinds[k] = true
			}
		}
		a.mu.Lock()
		a.kinds, a.kindsAt = kinds, time.Now()
		a.mu.Unlock()
		return kinds, nil
	})
	return v.(map[string]bool)
}

// specView is what the checks of a spec know of this node: its
// --max-payload, its handlers and stored calendars, and kindServed, which
// says whether some node of the cluster handles a kind.
func (a *Service) specView(kindServed func(kind string) bool) taskspec.NodeView {
	return taskspec.NodeView{
		MaxPayload:     a.cfg.MaxPayload,
		KindServed:     kindServed,
		HandlesKind:    a.cfg.Engine.HandlesKind,
		CalendarStored: a.cfg.Calendars.Stored,
	}
}

// diffNames returns the names in after but not before, and the reverse.
func diffNames(before, after []string) (added, removed []string) {
	for _, a := range after {
		if !slices.Contains(before, a) {
			added = append(added, a)
		}
	}
	for _, b := range before {
		if !slices.Contains(after, b) {
			removed = append(removed, b)
		}
	}
	return added, removed
}

package taskservice

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/taskd/taskd/internal/backoff"
	"github.com/taskd/taskd/internal/dispatch"
	"github.com/taskd/taskd/internal/eventhub"
	"github.com/taskd/taskd/internal/follow"
	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/localrefs"
	"github.com/taskd/taskd/internal/membership"
	"github.com/taskd/taskd/internal/ownership"
	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/internal/runs"
	"github.com/taskd/taskd/internal/startstop"
	"github.com/taskd/taskd/internal/taskapi"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Node is one taskd node. Create it with New, then Start and Stop it once.
type Node struct {
	cfg         Config
	log         hclog.Logger
	keys        keyspace.Keys
	incarnation string
	// life is the node's start/stop shape: the contexts its work runs
	// under and the groups Stop ends (internal/startstop/lifecycle.go).
	life *startstop.Lifecycle
	// d is the node's engine and its one lock (internal/dispatch): what
	// it holds, its timer queue, the runs in flight, the look-ahead.
	d *dispatch.Dispatcher

	// member is the node's registration under its lease, the renewals and
	// self-fencing (internal/membership). Its lock is taken under the
	// engine lock, never the other way.
	member *membership.Member

	hub *eventhub.Hub // the one watch of the event streams
	// writes is the write path (internal/writepath): the Txn shapes, the
	// Writer of lone Txns, and the batchers of the fenced writes and of
	// the armed runs' checks.
	writes writepath.Path
	// leader is the placement leader this node campaigns as
	// (internal/placement; its loop, "placement").
	leader *placement.Leader
	// followers are what the node follows rather than owns.
	followers followers
	// own is the ownership of the node's identities as seen from etcd:
	// adoption, handoff pick-up, the ownership index, repairs, the status
	// vote and its writes, the moves of a drain or a rebalancing request
	// (internal/ownership; ownerside.go is what it calls here).
	own *ownership.Holder

	// api answers the requests (internal/taskapi, requests.go); refs
	// keeps the calendar references of the non-durable tasks
	// (internal/localrefs).
	api  *taskapi.Service
	refs *localrefs.Refs
	// runs is the run path (internal/runs): the start, call, commit and
	// settling of every run, whatever its scope; it calls the handlers
	// through calls.go.
	runs *runs.Path
}

// followers are what a node follows rather than owns (internal/follow):
// watch runs every watch of the node on the one loop (the followers', the
// ownership index's, the registrations'); pauses and cals follow the
// pauses in force and the calendars (their locks are leaves under the
// engine lock), every the EVERY_NODE tasks, which it hands to the
// dispatcher's EVERY_NODE table (everynode.go).
type followers struct {
	watch  follow.Watch
	pauses *follow.Pauses
	cals   *follow.Calendars
	every  *follow.EveryNode
}

// parts are what New builds the node's services from and does not keep:
// the task ids (shared by the requests and the run path's overlap
// shadows), the reads of stored tasks, the identities' mappings, and the
// cluster as placement sees it (its candidates, its move Txns).
type parts struct {
	ids     *pending.IDSource
	store   *pending.Store
	idmap   *identity.Map
	cluster placement.Cluster
}

// New checks cfg and returns a node that has not started.
func New(cfg Config) (*Node, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	var inc [8]byte
	_, _ = rand.Read(inc[:])
	// The run path is filled in last, once what it calls exists; the
	// followers' callbacks bind to it before.
	n := &Node{
		cfg:         cfg,
		keys:        keyspace.New(cfg.Prefix),
		runs:        runs.New(),
		incarnation: hex.EncodeToString(inc[:]),
		d:           dispatch.New(dispatchConfigOf(cfg)),
	}
	n.log = cfg.Logger.With("node", cfg.Name, "incarnation", n.incarnation)
	n.member = n.newMember()
	p := parts{ids: pending.NewIDSource(), store: pending.NewStore(cfg.Client, writepath.NewWriter(cfg.Client).Read, n.keys),
		idmap: identity.NewMap(cfg.Client, n.keys)}
	f := &n.followers
	f.watch = follow.Watch{Client: cfg.Client, Keys: n.keys, EtcdTimeout: cfg.EtcdTimeout, MaxWait: cfg.HandoffPeriod, Logger: n.log}
	f.pauses = follow.NewPauses(f.watch, follow.OnPause{Began: n.d.PauseBegan, Lifted: n.d.PauseLifted})
	f.cals = follow.NewCalendars(f.watch)
	f.every = follow.NewEveryNode(f.watch, cfg.Name,
		follow.OnEveryNode{Put: n.d.InstallEvery, Deleted: n.runs.RemoveEvery, Listed: n.runs.EveryListed})
	n.writes = writepath.NewPath(writepath.PathConfig{Client: cfg.Client, Prefix: cfg.Prefix, Node: cfg.Name,
		EtcdTimeout: cfg.EtcdTimeout, MaxTxnOps: cfg.MaxTxnOps, MaxRequestBytes: cfg.MaxRequestBytes,
		Observe: cfg.Observer.observeTxn})
	p.cluster = n.newCluster(p.idmap)
	n.leader = n.newLeader(p.cluster)
	// A loop still running this long after Stop began is named in the log.
	n.life = startstop.NewLifecycle(n.log, 2*cfg.EtcdTimeout)
	n.own = n.newOwnership(p)
	n.hub = eventhub.New(eventhub.Config{Client: cfg.Client, Prefix: cfg.Prefix, Logger: n.log, EtcdTimeout: cfg.EtcdTimeout,
		Life: n.life.Ctx, Buffer: cfg.EventBuffer, MaxStreams: cfg.MaxEventStreams})
	n.refs = localrefs.New(localrefs.Config{Client: cfg.Client, Keys: n.keys, Shapes: n.writes.Shapes, Writer: n.writes.Writer,
		EtcdTimeout: cfg.EtcdTimeout, MaxTxnOps: cfg.MaxTxnOps, Lease: n.member.Lease, Life: n.life.Ctx, Logger: n.log})
	n.api = taskapi.New(taskapi.Config{
		Name: cfg.Name, Incarnation: n.incarnation, EtcdTimeout: cfg.EtcdTimeout, MaxTxnOps: cfg.MaxTxnOps, MaxPayload: cfg.MaxPayload,
		Client: cfg.Client, Keys: n.keys, Store: p.store, Map: p.idmap, IDs: p.ids,
		Shapes: n.writes.Shapes, Writer: n.writes.Writer, Batch: n.writes.Batch, Cluster: p.cluster,
		Calendars: f.cals, Pauses: f.pauses, EveryNode: f.every, LocalRefs: n.refs,
		TraceParent: TraceParent, Engine: engineSide{n.d, n}, Logger: n.log,
	})
	n.d.Deps = dispatch.Deps{Log: n.log, Incarnation: n.incarnation,
		Life:   dispatch.Life{Ctx: n.life.Ctx, RunCtx: n.life.RunCtx, Starters: &n.life.Starters, Runs: &n.life.Runs},
		Member: n.member, Keys: n.keys, IDMap: p.idmap, Writes: n.writes, Pauses: f.pauses, Cals: f.cals,
		Own: n.own, Voter: n.own.Voter(), Runs: n.runs.Runner()}
	n.runs.Init(runsConfigOf(cfg, n.incarnation, n.log, n.emitRun), runs.Deps{Log: n.log, D: n.d, Member: n.member,
		Writes: n.writes, Life: n.life, Pauses: f.pauses, Cals: f.cals, Every: f.every, Own: n.own, Keys: n.keys,
		Refs: n.refs, IDs: p.ids})
	return n, nil
}

// Name is the node's stable name.
func (n *Node) Name() string { return n.cfg.Name }

// Incarnation is the random id of this start of the node.
func (n *Node) Incarnation() string { return n.incarnation }

// State is the node's life-cycle state.
func (n *Node) State() taskdv1.NodeState {
	n.d.Lock()
	defer n.d.Unlock()
	return n.d.Phase.State
}

// DispatchStart is when the node began dispatching (zero before RUNNING).
func (n *Node) DispatchStart() time.Time {
	n.d.Lock()
	defer n.d.Unlock()
	return n.d.Phase.DispatchStart
}

// Kinds lists the kinds this node handles, sorted: its handlers', its
// connected workers' and those declared for its workers
// (Config.DeclaredKinds), which it accepts before a worker of them comes.
func (n *Node) Kinds() []string {
	kinds := make([]string, 0, len(n.cfg.Handlers)+len(n.cfg.DeclaredKinds))
	for k := range n.cfg.Handlers {
		kinds = append(kinds, k)
	}
	kinds = append(kinds, n.cfg.DeclaredKinds...) // none has a handler (setDefaults)
	if n.cfg.Remote != nil {
		remote := 0
		for _, k := range n.cfg.Remote.Kinds() {
			if n.cfg.Handlers[k] == nil && !n.d.Declared(k) && remote < MaxRemoteKinds && len(k) <= MaxKindLen {
				kinds = append(kinds, k)
				remote++
			}
		}
	}
	sort.Strings(kinds)
	return kinds
}

// Start registers the node, resolves what its previous incarnation held
// (contract §5.4), and only then starts dispatching and becomes RUNNING. ctx
// bounds the start-up; the node runs until Stop.
func (n *Node) Start(ctx context.Context) error {
	if !n.life.Begin() {
		return errors.New("taskservice: node already started")
	}

	// The event streams are served from the start (the API is).
	n.life.Loops.Go("events", n.hub.Run)
	// Each step is retried while etcd fails (a lost reply, a leader
	// election), until ctx ends: a start must not die of one failed call.
	// A refusal (a live node holds the name) is final.
	if err := n.startStep(ctx, "register", func() error { return n.member.Register(ctx) }); err != nil {
		return err
	}
	// Renew the lease from now on: adopting a large node's identities can
	// take longer than the lease lasts.
	n.life.Keeper.Go("lease", n.member.Run)
	// Calendars and pauses are known before any task is queued.
	if err := n.startStep(ctx, "load calendars", func() error { return n.followers.cals.Load(ctx) }); err != nil {
		return err
	}
	n.life.Loops.Go("calendars", n.followers.cals.Run)
	if err := n.startStep(ctx, "load pauses", func() error { return n.followers.pauses.Load(ctx) }); err != nil {
		return err
	}
	n.life.Loops.Go("pauses", n.followers.pauses.Run)
	if err := n.startStep(ctx, "adopt identities", func() error { return n.own.AdoptOwned(ctx) }); err != nil {
		return err
	}
	if err := n.startStep(ctx, "load EVERY_NODE tasks", func() error { return n.followers.every.Load(ctx) }); err != nil {
		return err
	}
	n.d.Lock()
	n.d.Phase.State = taskdv1.NodeState_NODE_STATE_RUNNING
	n.d.Phase.DispatchStart = time.Now()
	// On-start-up triggers come due with the dispatch start: the tasks
	// loaded before it that wait for nothing else are looked at again.
	for _, idents := range []map[string]*held.Ident{n.d.Idents, n.d.Every} {
		for _, st := range idents {
			for e := range st.Tasks.All() {
				if e.Idx < 0 && !e.Running {
					n.d.ReschedLocked(e)
				}
			}
		}
	}
	n.d.Unlock()
	if err := n.startStep(ctx, "publish RUNNING", func() error { return n.member.Publish(ctx) }); err != nil {
		return err
	}
	// Loops started after a concurrent Stop do not run (startstop).
	n.life.Loops.Go("repair", n.own.RunRepairs)
	n.life.Loops.Go("every", n.followers.every.Run)
	n.life.Loops.Go("placement", n.leader.Run)
	n.life.Loops.Go("control", follow.NewControl(n.followers.watch, n.cfg.Name,
		follow.OnControl{Drain: n.drainRequested, Rebalance: n.own.RebalanceRequested}).Run)
	n.life.Loops.Go("voter", n.own.Voter().Run)
	n.life.Loops.Go("dispatch", func(context.Context) { n.d.DispatchLoop() })
	n.life.Loops.Go("thaw", n.d.ThawLoop)
	n.life.Loops.Go("handoff", n.own.RunHandoff)
	n.life.Loops.Go("ownership", n.own.RunIndex)
	if n.cfg.Remote != nil {
		n.life.Loops.Go("remote kinds", n.remoteKindsLoop)
		n.life.Loops.Go("worker waits", n.d.WorkerWaitLoop)
	}
	n.log.Info("node running", "dispatch_start", n.DispatchStart().Format(time.RFC3339Nano),
		"identities", n.ownedCount(), "kinds", n.Kinds())
	return nil
}

// startStep runs one step of Start, again with backoff while it fails,
// until it succeeds, fails for good (a live node holds the name), or ctx
// ends (then the last error is returned).
func (n *Node) startStep(ctx context.Context, what string, step func() error) error {
	bo := backoff.New(50*time.Millisecond, time.Second)
	for {
		err := step()
		if err == nil || errors.Is(err, ErrNameInUse) || errors.Is(err, membership.ErrReplaced) {
			return err
		}
		n.log.Warn("start: step failed; retrying", "step", what, "error", err)
		if !bo.Wait(ctx) {
			return fmt.Errorf("start: %s: %w", what, err)
		}
	}
}

func (n *Node) ownedCount() int {
	n.d.Lock()
	defer n.d.Unlock()
	return len(n.d.Idents)
}

// Stop stops dispatching, waits for runs in flight until ctx is done, then
// cancels them (they end INTERRUPTED and, with requests_recovery, run again
// on the next start), marks the node STOPPED and revokes its lease. The
// identities stay mapped to the node's name for its next start. The lease
// is renewed until the runs have ended and their outcomes are committed. A
// registration already gone when the node marks itself STOPPED (its lease
// lapsed, or a newer incarnation took the name) is not an error: the
// record and the lease that Stop would remove are gone already.
func (n *Node) Stop(ctx context.Context) error {
	first, wasStarted := n.life.End()
	if !first {
		return nil
	}
	// Last: the stop is over, and Done closes once the detached goroutines
	// (possibly the caller) return.
	defer n.life.Detached.Cancel()
	n.d.Kick()
	n.life.Loops.Stop()
	// The dispatcher has returned, so no starter starts any more.
	n.life.Starters.Wait()
	n.d.ReleaseQueuedReservations()
	n.d.DisarmAll(errNodeStopping)

	n.log.Debug("stopping: waiting for the runs in flight")
	n.life.WaitRuns(ctx, errNodeStopping, func() { n.log.Warn("stop: cancelling runs still in flight") })
	n.writes.Wait()
	// Nothing commits any more: the lease may go.
	n.life.Keeper.Stop()
	if !wasStarted {
		return nil
	}
	n.d.Lock()
	n.d.Phase.State = taskdv1.NodeState_NODE_STATE_STOPPED
	n.d.Unlock()
	var errs []error
	// The final writes are made even if ctx (the wait for runs) is over,
	// each bounded by EtcdTimeout.
	bg := context.WithoutCancel(ctx)
	gone := false
	if err := n.member.Publish(bg); errors.Is(err, membership.ErrRegistrationGone) {
		gone = true
	} else if err != nil {
		errs = append(errs, err)
	}
	if err := n.member.Revoke(bg); errors.Is(err, rpctypes.ErrLeaseNotFound) {
		gone = true
	} else if err != nil {
		errs = append(errs, fmt.Errorf("revoke node lease: %w", err))
	}
	if gone {
		n.log.Warn("stop: the registration was gone already (the lease lapsed or the name was taken over)")
	}
	n.log.Info("node stopped")
	return errors.Join(errs...)
}

// Done is closed once the node has stopped, whether by Stop or by itself
// (it was replaced by a newer incarnation of its name, or it drained), and
// the goroutine that stopped it from inside has returned.
func (n *Node) Done() <-chan struct{} { return n.life.Detached.Done() }

// stopAsync stops the node from one of its loops (which Stop waits for, so
// a loop cannot call Stop itself), in a detached goroutine.
func (n *Node) stopAsync() {
	n.life.Detached.Go("stop", func(ctx context.Context) {
		// ctx ends only when Stop is over.
		sctx, cancel := context.WithTimeout(ctx, n.cfg.DrainTimeout)
		defer cancel()
		_ = n.Stop(sctx)
	})
}

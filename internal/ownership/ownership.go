// Package ownership is how identities arrive at this node and leave it,
// as seen from etcd: the adoption at start (and after a lost lease) of the
// identities mapped to the node's name, the pick-up of handoff entries
// (contract §3.4), the watch on the node's ownership index that tells it an
// identity left (contract §3.3), the reads that repair a write of unknown
// outcome, the writes of the status vote (contract §7), and the moves away
// of a drain or of a rebalancing request (contract §3.1).
//
// A Holder reads and writes etcd (every write through internal/writepath)
// and tells the node's engine what it found through Engine: the engine
// alone holds the identities' tasks, their timers and their runs. Its one
// lock (repairs.mu) guards the repair queue only; it is a leaf, taken under
// the engine's lock (a repair asked for while the engine holds it) and never
// held across a call into Engine or etcd. The rest of a Holder is read-only
// after New, or used by one loop (rebalancedAway: the control loop's).
package ownership

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/follow"
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/membership"
	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	"github.com/taskd/taskd/pkg/vote"
)

// Engine is the node's engine as its ownership sees it: what holds the
// identities' tasks. Its methods take the engine's lock; none is called
// with a Holder's lock held.
type Engine interface {
	// Install puts stored tasks of id, owned under epoch, into the
	// engine's queue. With loadRev > 0, stored is every task of id as of
	// that revision, and the engine drops the entries it lacks unless they
	// were written after it.
	Install(id string, epoch int64, stored []pending.Stored, loadRev int64)
	// Held returns the epoch the engine holds id under; ok is false when
	// it does not hold it.
	Held(id string) (epoch int64, ok bool)
	// Identities lists the identities the engine holds.
	Identities() []string
	// Left drops id, no longer this node's, unless it was adopted again at
	// a later revision than rev, and tells the listeners it moved.
	Left(id string, rev int64)
	// Forget drops id, whatever its epoch, if the engine holds it.
	Forget(id string)
	// TaskGone drops the entry of task taskID of id, whose record is gone,
	// unless a run of it is in flight.
	TaskGone(id, taskID string)
	// HandedOff tells the listeners that a handoff entry brought id's
	// tasks (taskID "" for all of them) from node from.
	HandedOff(id, taskID, kind, from string)
	// Movable returns the identities a drain can move now (those with no
	// run in flight, or all of them when late), each with its epoch, and
	// how many the engine holds in all.
	Movable(late bool) (ready []identity.Owner, left int)
	// ChooseToMove marks leaving and returns up to limit identities idle
	// through horizon, none of them in resting (rebalancing.go).
	ChooseToMove(limit int, horizon time.Time, resting func(id string) bool) []string
	// StopLeaving lets the chosen identities that were not moved run
	// again.
	StopLeaving(ids []string)
	// Running reports whether the node is RUNNING (not draining).
	Running() bool
}

// Config is what a Holder needs.
type Config struct {
	Name, Incarnation string
	EtcdTimeout       time.Duration
	MaxTxnOps         int
	// ColdAfter is Config.ColdAfter: a task due further than this is only
	// glanced at when its identity is loaded (storedOf).
	ColdAfter time.Duration
	// HandoffPeriod, HandoffStart and DisableHandoffWatch are the handoff
	// watcher's (pkg/handoff).
	HandoffPeriod, HandoffStart time.Duration
	DisableHandoffWatch         bool
	// DrainTimeout and RebalanceInterval set how long an identity this
	// node moved away serving a rebalancing request is not chosen again.
	DrainTimeout, RebalanceInterval time.Duration
	// VoteDelay and RemoveDelay are the status vote's (pkg/vote): how long
	// an identity's activity must hold before its vote is sent, and how
	// long it stays idle before it is unmapped.
	VoteDelay, RemoveDelay time.Duration

	Client  *clientv3.Client
	Keys    keyspace.Keys
	Map     *identity.Map
	Store   *pending.Store
	Shapes  writepath.Shapes
	Writer  writepath.Writer
	Member  *membership.Member
	Cluster placement.Cluster
	Watch   follow.Watch
	Engine  Engine
	Logger  hclog.Logger
	// Life ends when the node stops: the status votes are written under
	// it.
	Life context.Context
	// HandoffTaken and RebalanceMoves observe the pick-up of a handoff
	// entry and the moves of a served rebalancing request (may be nil).
	HandoffTaken   func(took time.Duration)
	RebalanceMoves func(moves int)
}

// Holder is one node's ownership of its identities.
type Holder struct {
	cfg     Config
	log     hclog.Logger
	engine  Engine
	repairs repairQueue
	// voter decides when an identity's status vote is sent and when an
	// idle one is unmapped; its writes are SendVote and UnmapIdle (vote.go).
	voter *vote.Voter
	// rebalancedAway holds the identities this node moved away serving
	// rebalancing requests, until when they stay if they come back. Used
	// by the control loop only.
	rebalancedAway map[string]time.Time
}

// New returns the ownership of a node; nothing runs until its loops do.
func New(cfg Config) *Holder {
	h := &Holder{
		cfg:            cfg,
		log:            cfg.Logger,
		engine:         cfg.Engine,
		repairs:        repairQueue{wake: make(chan struct{}, 1)},
		rebalancedAway: map[string]time.Time{},
	}
	h.voter = vote.New(cfg.VoteDelay, cfg.RemoveDelay, h.SendVote, h.UnmapIdle)
	return h
}

// Voter is the status vote of the node's identities (pkg/vote): the
// engine tells it each identity's activity; its Run is the node's loop.
func (h *Holder) Voter() *vote.Voter { return h.voter }

func (h *Holder) etcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, h.cfg.EtcdTimeout)
}

// mine reports whether owner maps its identity to this node's name
// (whichever incarnation).
func (h *Holder) mine(owner identity.Owner) bool {
	return owner.Mapped && owner.Node == h.cfg.Name
}

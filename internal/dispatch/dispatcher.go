package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/taskd/taskd/internal/admission"
	"github.com/taskd/taskd/internal/follow"
	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/membership"
	"github.com/taskd/taskd/internal/ownership"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/vote"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Dispatcher is what the node holds and dispatches: its identities and
// their tasks, the timer queue, the runs in flight, the look-ahead, the
// cold tasks read again, the due tasks a pause or an admission rule holds
// back, and the node's phase.
//
// Lock: mu (Lock, Unlock) guards every field below it. It is the node's
// one engine lock: the leaves (the membership's, the followers', the
// admission's) are taken under it, never the other way, and no etcd call
// is made while it is held. Deps and cfg are set before the node starts
// and never change.
type Dispatcher struct {
	Deps
	cfg Config

	mu      sync.Mutex
	Phase   Phase                  // the node's state, since when it dispatches, whether it drains
	Idents  map[string]*held.Ident // durable identities owned here
	Local   map[string]*held.Ident // non-durable tasks, by identity
	Every   map[string]*held.Ident // EVERY_NODE tasks, by identity
	Flights held.Flights           // runs in flight (flights.go)
	Queue   held.Queue
	arming  armState                 // the look-ahead (arming.go)
	thawing thawState                // cold tasks whose records are read again (thaw.go)
	parked  map[*held.Entry]struct{} // due entries a pause holds back (pauses.go)
	// Admit is what a due run waits for before it starts, besides a slot:
	// its kind's limit, a remote worker, a kind nothing serves
	// (internal/admission; the glue in limits.go, workerwait.go, unserved.go).
	Admit admitState
	wake  chan struct{} // wakes the dispatch loop
	slots chan struct{} // one per concurrent run
}

// Phase is where the node is in its life: its state as it publishes it,
// the instant it began dispatching (contract: nothing runs before it), and
// whether it drains.
type Phase struct {
	State         taskdv1.NodeState
	DispatchStart time.Time
	Draining      bool // no run starts; identities are being handed away
}

// Deps are the parts of the node the dispatcher calls; the node sets
// them once, in taskservice.New, before it starts.
type Deps struct {
	Log         hclog.Logger
	Incarnation string
	Life        Life
	Member      *membership.Member
	Keys        keyspace.Keys
	IDMap       *identity.Map
	Writes      writepath.Path
	Pauses      *follow.Pauses
	Cals        *follow.Calendars
	Own         *ownership.Holder
	Voter       *vote.Voter
	Runs        Runner
}

// Config is what the dispatcher reads of the node's configuration
// (taskservice.Config has each field's meaning and default).
type Config struct {
	Name                        string
	Workers, MaxCatchUp         int
	LeaseTTL, EtcdTimeout       time.Duration
	LookAhead, ColdAfter        time.Duration
	MisfireThreshold, Retention time.Duration
	KindLimits                  map[string]int
	DeclaredKinds               []string
	// HasHandler reports whether a handler of kind runs on this node.
	HasHandler func(kind string) bool
	// Remote is the remote workers' slots; nil if the node has none.
	Remote Remote
}

// Remote is the remote workers (Config.Remote) as the dispatcher
// asks for them: a worker's slot for a due run, and a signal when one
// may have come free.
type Remote interface {
	admission.Remote[held.Slot]
	Freed() <-chan struct{}
}

// Life is the part of the node's start/stop shape the dispatcher runs
// under (pkg/taskservice's lifecycle).
type Life struct {
	// Ctx ends when Stop begins; RunCtx is the parent of every run's
	// context.
	Ctx, RunCtx context.Context
	// Starters counts the starter goroutines; Runs the runs'
	// goroutines.
	Starters, Runs *sync.WaitGroup
}

// Runner is the run path the dispatcher hands due tasks to
// (pkg/taskservice: the start of a run, an overlap's shadow, the scopes'
// purge).
type Runner interface {
	// Start writes the start of a due entry and returns what launches
	// its run, or the run armed ahead.
	Start(e *held.Entry, ahead time.Duration) (func(), *held.Armed)
	// StartOverlap starts the run of an overlapping entry's shadow.
	StartOverlap(s *held.Entry)
	// DropShadowLocked drops e's overlap shadow (mu held).
	DropShadowLocked(e *held.Entry)
	// StartCtx bounds a start write by the node's lease margin.
	StartCtx() (context.Context, context.CancelFunc)
	// PurgeRecord deletes a finished task at the end of its retention.
	PurgeRecord(k held.Scope, e *held.Entry, rec *storev1.TaskRecord, rev, epoch int64)
}

// TableOf is the table of the identities of scope k (mu held).
func (n *Dispatcher) TableOf(k held.Scope) map[string]*held.Ident {
	switch k {
	case held.ScopeEvery:
		return n.Every
	case held.ScopeLocal:
		return n.Local
	}
	return n.Idents
}

// Kick wakes the dispatch loop.
func (n *Dispatcher) Kick() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *Dispatcher) EtcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, n.cfg.EtcdTimeout)
}

func New(cfg Config) *Dispatcher {
	return &Dispatcher{
		cfg:     cfg,
		Phase:   Phase{State: taskdv1.NodeState_NODE_STATE_STARTING},
		Idents:  map[string]*held.Ident{},
		Local:   map[string]*held.Ident{},
		Every:   map[string]*held.Ident{},
		Flights: held.NewFlights(),
		arming:  armState{runs: map[*held.Armed]struct{}{}},
		wake:    make(chan struct{}, 1),
		thawing: thawState{wake: make(chan struct{}, 1)},
		slots:   make(chan struct{}, cfg.Workers),
		parked:  map[*held.Entry]struct{}{},
		Admit:   newAdmission(cfg),
	}
}

// Lock takes the engine lock (mu).
func (n *Dispatcher) Lock() { n.mu.Lock() }

// Unlock releases the engine lock.
func (n *Dispatcher) Unlock() { n.mu.Unlock() }

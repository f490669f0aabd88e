// Package runs is the node's run path, one type for the three scopes: the
// fenced start of a due entry the dispatcher hands it (start.go, through
// dispatch.Runner), the handler's call and the commit of its result
// (run.go), the run markers of runs cut short (markers.go), an overlapping
// run's shadow (overlap.go), and each scope's writes behind one interface
// (scope.go). It tells the node's listeners what happened (Config.Emit).
//
// What a handler sees and what its returned error asks for is the node's
// public face's (pkg/taskservice): the path calls it through Caller and
// reads its Answer.
//
// Lock: none of its own; what it changes in the node's entries it changes
// under the engine lock (the dispatcher's), never across an etcd call.
package runs

import (
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/trace"

	"github.com/taskd/taskd/internal/dispatch"
	"github.com/taskd/taskd/internal/follow"
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/localrefs"
	"github.com/taskd/taskd/internal/membership"
	"github.com/taskd/taskd/internal/ownership"
	"github.com/taskd/taskd/internal/startstop"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/pending"
)

// Config is what the run path is told by its node: the node's settings it
// reads (see taskservice.Config) and the hooks into the public face.
type Config struct {
	Name           string
	Incarnation    string
	Client         *clientv3.Client
	DefaultTimeout time.Duration
	DrainTimeout   time.Duration
	EtcdTimeout    time.Duration
	HandoffPeriod  time.Duration
	LeaseTTL       time.Duration
	Retention      time.Duration
	History        int
	MaxOverlap     int
	MaxPayload     int
	TracerProvider trace.TracerProvider // nil: the global one
	// Local reports whether a handler of kind runs in this process; a
	// kind without one goes to a remote worker if Remote is set.
	Local  func(kind string) bool
	Remote bool
	// Caller calls the handlers; Emit tells the listeners an event.
	Caller Caller
	Emit   func(Event)
}

// Deps are the node's parts the run path works with.
type Deps struct {
	Log    hclog.Logger
	D      *dispatch.Dispatcher
	Member *membership.Member
	Writes writepath.Path
	Life   *startstop.Lifecycle
	Pauses *follow.Pauses
	Cals   *follow.Calendars
	Every  *follow.EveryNode
	Own    *ownership.Holder
	Keys   keyspace.Keys
	Refs   *localrefs.Refs
	IDs    *pending.IDSource
}

// Path is the run path of one node.
type Path struct {
	cfg       Config
	log       hclog.Logger
	d         *dispatch.Dispatcher
	member    *membership.Member
	writes    writepath.Path
	life      *startstop.Lifecycle
	followers followers
	own       *ownership.Holder
	keys      keyspace.Keys
	refs      *localrefs.Refs
	ids       *pending.IDSource
}

// followers are what the run path reads of what the node follows: the
// pauses in force, the calendars and the EVERY_NODE tasks.
type followers struct {
	pauses *follow.Pauses
	cals   *follow.Calendars
	every  *follow.EveryNode
}

// New returns an empty run path, to be filled in by Init once its
// Config and Deps exist, so that what binds to its methods (the
// followers' callbacks) can be built first.
func New() *Path { return &Path{} }

// Init fills in p once what it calls exists.
func (p *Path) Init(cfg Config, deps Deps) {
	*p = Path{cfg: cfg, log: deps.Log, d: deps.D, member: deps.Member, writes: deps.Writes, life: deps.Life,
		followers: followers{pauses: deps.Pauses, cals: deps.Cals, every: deps.Every},
		own:       deps.Own, keys: deps.Keys, refs: deps.Refs, ids: deps.IDs}
}

// Runner is the path as the dispatcher calls it (dispatch.Runner).
func (p *Path) Runner() dispatch.Runner { return (*nodeRuns)(p) }

package taskservice

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/trace"

	"github.com/taskd/taskd/internal/runs"
	"github.com/taskd/taskd/internal/specdefaults"
	"github.com/taskd/taskd/internal/writepath"
)

// DefaultEventBuffer is Config.EventBuffer's default: 1 MiB, some 7000
// events of a typical size.
const DefaultEventBuffer = 1 << 20

// DefaultMaxEventStreams is Config.MaxEventStreams's default: with each
// stream holding up to DefaultEventBuffer for its reader (and one response
// in flight), 256 streams bound what readers can make a node hold to about
// half a GiB in the worst case.
const DefaultMaxEventStreams = 256

// Config configures a Node. Zero values take the defaults of contract §9.
type Config struct {
	// Name is the node's stable name (required).
	Name string
	// Client reaches the cluster's etcd (required). The node does not close it.
	Client *clientv3.Client
	// Prefix of every key, so that several clusters can share one etcd.
	Prefix string
	// Address is the gRPC address advertised in the node's registration.
	Address string
	// PeerTLS, when set, is the client TLS configuration for dialling
	// other nodes' gRPC addresses (the liveness probe of a previous
	// incarnation); nil dials in plain text.
	PeerTLS *tls.Config
	// Handlers run the tasks, by kind.
	Handlers map[string]Handler
	// Remote, if set, runs the kinds that have no handler in Handlers: the
	// remote workers connected to this node (pkg/workers). Its kinds are
	// advertised in the node's registration beside the handlers' and
	// follow its workers as they come and go.
	Remote Remote
	// DeclaredKinds are kinds that Remote's workers will serve, declared
	// ahead of their first worker (taskd --kinds): the node advertises them
	// in its registration with the kinds it serves, so scheduling accepts
	// them before any worker of them connects, and their runs wait on the
	// identity's owner, visibly (internal/dispatch/unserved.go), until one does. At most
	// MaxWorkerKinds, each a valid kind with no handler in Handlers;
	// they need Remote.
	DeclaredKinds []string
	// Listeners are told, in order, the events of this node's work: the
	// run events of the runs it makes (FIRED to FINALIZED), MISFIRED, and
	// the CANCELED, PAUSED, RESUMED, UPDATED, MOVED and HANDED_OFF it
	// records. SCHEDULED is not among them: a task may be stored through
	// any node, so it is an event of the cluster's stream (WatchEvents),
	// which reads it from etcd.
	Listeners []Listener
	// Observer is told measurements of the node's own work (stats.go).
	Observer Observer
	// Vetoes are asked, in order, whether each run may start (RunVeto).
	Vetoes []RunVeto
	// Logger; every line carries the node name.
	Logger hclog.Logger
	// TracerProvider makes the span of each run; nil uses OpenTelemetry's
	// global provider, a no-op unless the process configured one.
	TracerProvider trace.TracerProvider
	// Replace lets Start take the name over from a live process registered
	// under it; without it Start refuses with ErrNameInUse (a registration
	// whose process does not answer is replaced either way).
	Replace bool

	LeaseTTL         time.Duration // node liveness; default 10s
	MisfireThreshold time.Duration // default 60s
	MaxCatchUp       int           // FIRE_ALL cap; default 100
	MaxOverlap       int           // overlapping runs of one allow_overlap task in flight; default 4
	History          int           // runs kept per task; default 20
	Retention        time.Duration // finished tasks kept; default 24h
	MaxPayload       int           // payload and data limit; default 256 KiB
	Workers          int           // runs starting or in their handler at once (a commit holds none); default 128; one identity holds at most 3/4 of them
	// KindLimits caps, per kind, the runs of that kind in flight on this
	// node at once (each at least 1; a kind not named has no cap but
	// Workers). A run waiting for its kind's cap holds no worker and does
	// not hold back other kinds or identities (contract §5.7).
	KindLimits     map[string]int
	DefaultTimeout time.Duration // run timeout when a task names none; default 5m
	EtcdTimeout    time.Duration // deadline of one etcd call; default 5s
	// MaxTxnOps is the etcd server's --max-txn-ops (default 128; the
	// embedded etcd allows 1024). A schedule batch that needs more
	// operations is written one identity at a time.
	MaxTxnOps int
	// MaxRequestBytes is the etcd server's --max-request-bytes (default
	// 1.5 MiB, etcd's default and the embedded etcd's). Every write is
	// sized before it is sent (the encoded request, compares and reads
	// included) against it less 1 KiB for etcd's own header, and at most
	// the Go client's 2 MiB send limit: a batch holds what fits, a write
	// that cannot fit alone fails with ErrTooLarge.
	MaxRequestBytes int

	// The delays below take their default when zero; a negative one means
	// no delay at all (Darkstar's tests run with a start of 0).
	HandoffPeriod time.Duration // handoff polling period; default 500ms
	HandoffStart  time.Duration // first handoff poll after start; default 2500ms
	VoteDelay     time.Duration // status vote delay; default 5s
	RemoveDelay   time.Duration // unmapping delay of an inactive identity; default 5s
	DrainTimeout  time.Duration // wait for runs in flight when draining; default 30s
	// Rebalancing (internal/placement): every RebalanceInterval (default 10s)
	// the placement leader compares the identity counts of the RUNNING
	// nodes and, while the most and the least loaded differ by more than
	// RebalanceTolerance percent of the mean (default 10; at least one
	// identity; negative means 0%), has identities moved from the one to
	// the other, at most RebalanceRate (default 50) per interval, each a
	// planned move chosen by their owner, never one with a run in flight
	// (internal/ownership's rebalance.go). DisableRebalance turns it off: identities
	// then move only on MoveIdentity, draining and a node's death.
	DisableRebalance   bool
	RebalanceInterval  time.Duration
	RebalanceRate      int
	RebalanceTolerance int
	// LookAhead is how long before its fire time a run may be armed: its
	// start written, its handler then called at the fire time (see
	// docs/architecture.md, "Look-ahead"). Default 1s.
	LookAhead time.Duration
	// ColdAfter: a durable task that waits longer than this for its due
	// time keeps no record in memory, only its place in the timer queue;
	// its record is read again ColdAfter/2 + LookAhead before it is due
	// (see docs/architecture.md, "Cold tasks"). Default 2m; negative: every
	// waiting task keeps its record.
	ColdAfter time.Duration

	// EventBuffer bounds, in encoded bytes, the events one WatchEvents
	// stream holds for a reader that has not taken them yet (twice that
	// while it catches up from an old cursor); a reader further behind is
	// ended with ErrReaderBehind and the cursor to resume from. One
	// revision's events always fit. Default DefaultEventBuffer.
	EventBuffer int
	// MaxEventStreams bounds the WatchEvents streams the node serves at
	// once; one more is refused with ErrTooManyStreams. Default
	// DefaultMaxEventStreams.
	MaxEventStreams int

	// DisableHandoffWatch leaves handoff pick-up to polling alone (for
	// diagnosis, and for the test that proves polling is enough).
	DisableHandoffWatch bool
}

// The rebalancing defaults (Config.RebalanceInterval, RebalanceRate,
// RebalanceTolerance).
const (
	DefaultRebalanceInterval  = 10 * time.Second
	DefaultRebalanceRate      = 50
	DefaultRebalanceTolerance = 10
)

// DefaultMaxRequestBytes is etcd's default --max-request-bytes.
const DefaultMaxRequestBytes = writepath.DefaultMaxRequestBytes

func (c *Config) setDefaults() error {
	if c.Name == "" {
		return errors.New("taskservice: Config.Name is required")
	}
	if err := ValidateNodeName("Config.Name", c.Name); err != nil {
		return fmt.Errorf("taskservice: %w (it is used in etcd keys)", err)
	}
	if c.Client == nil {
		return errors.New("taskservice: Config.Client is required")
	}
	if c.Prefix == "" {
		c.Prefix = "/taskd/"
	}
	if c.Prefix[0] != '/' || c.Prefix[len(c.Prefix)-1] != '/' {
		return fmt.Errorf("taskservice: Config.Prefix %q must start and end with '/'", c.Prefix)
	}
	// Zero takes the default; a negative delay means none.
	def := func(d *time.Duration, v time.Duration) {
		switch {
		case *d == 0:
			*d = v
		case *d < 0:
			*d = 0
		}
	}
	def(&c.LeaseTTL, 10*time.Second)
	def(&c.MisfireThreshold, 60*time.Second)
	def(&c.Retention, 24*time.Hour)
	def(&c.DefaultTimeout, specdefaults.Timeout)
	def(&c.EtcdTimeout, 5*time.Second)
	def(&c.HandoffPeriod, 500*time.Millisecond)
	def(&c.HandoffStart, 2500*time.Millisecond)
	def(&c.VoteDelay, 5*time.Second)
	def(&c.RemoveDelay, 5*time.Second)
	def(&c.DrainTimeout, 30*time.Second)
	def(&c.LookAhead, time.Second)
	def(&c.RebalanceInterval, DefaultRebalanceInterval)
	if c.RebalanceInterval <= 0 {
		return fmt.Errorf("taskservice: RebalanceInterval must be positive")
	}
	if c.RebalanceRate <= 0 {
		c.RebalanceRate = DefaultRebalanceRate
	}
	switch {
	case c.RebalanceTolerance == 0:
		c.RebalanceTolerance = DefaultRebalanceTolerance
	case c.RebalanceTolerance < 0:
		c.RebalanceTolerance = 0
	case c.RebalanceTolerance > 100:
		return fmt.Errorf("taskservice: RebalanceTolerance %d%% is over 100%%", c.RebalanceTolerance)
	}
	def(&c.ColdAfter, 2*time.Minute)
	if c.LeaseTTL < 2*time.Second {
		return fmt.Errorf("taskservice: LeaseTTL %s is below etcd's minimum of 2s", c.LeaseTTL)
	}
	if c.MaxOverlap <= 0 {
		c.MaxOverlap = DefaultMaxOverlap
	}
	if c.MaxCatchUp <= 0 {
		c.MaxCatchUp = 100
	}
	if c.History <= 0 {
		c.History = 20
	}
	if c.MaxPayload <= 0 {
		c.MaxPayload = 256 << 10
	}
	if c.EventBuffer <= 0 {
		c.EventBuffer = DefaultEventBuffer
	}
	if c.MaxEventStreams <= 0 {
		c.MaxEventStreams = DefaultMaxEventStreams
	}
	if c.MaxTxnOps <= 0 {
		c.MaxTxnOps = 128
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxRequestBytes < 64<<10 {
		return fmt.Errorf("taskservice: MaxRequestBytes %d is below 64 KiB: no task would fit", c.MaxRequestBytes)
	}
	if c.Workers <= 0 {
		c.Workers = 128
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	for kind, l := range c.KindLimits {
		if err := validateKind("Config.KindLimits kind", kind); err != nil {
			return fmt.Errorf("taskservice: %w", err)
		}
		if l < 1 {
			return fmt.Errorf("taskservice: Config.KindLimits[%q] is %d; a limit is at least 1", kind, l)
		}
	}
	if err := c.checkDeclaredKinds(); err != nil {
		return err
	}
	for kind, h := range c.Handlers {
		if kind == "" || len(kind) > MaxKindLen {
			return fmt.Errorf("taskservice: handler kind %q must be 1-%d bytes", kind, MaxKindLen)
		}
		if h == nil {
			return fmt.Errorf("taskservice: handler of kind %q is nil", kind)
		}
	}
	return nil
}

// checkDeclaredKinds checks DeclaredKinds: bounded as a worker's kinds
// are, each a valid kind named once, none with a handler here, and a
// Remote to serve them.
func (c *Config) checkDeclaredKinds() error {
	if len(c.DeclaredKinds) == 0 {
		return nil
	}
	if c.Remote == nil {
		return errors.New("taskservice: Config.DeclaredKinds needs Config.Remote: declared kinds are served by remote workers")
	}
	if len(c.DeclaredKinds) > MaxWorkerKinds {
		return fmt.Errorf("taskservice: Config.DeclaredKinds has %d kinds, the limit is %d", len(c.DeclaredKinds), MaxWorkerKinds)
	}
	seen := make(map[string]bool, len(c.DeclaredKinds))
	for i, kind := range c.DeclaredKinds {
		if err := validateKind(fmt.Sprintf("Config.DeclaredKinds[%d]", i), kind); err != nil {
			return fmt.Errorf("taskservice: %w", err)
		}
		if seen[kind] {
			return fmt.Errorf("taskservice: Config.DeclaredKinds names kind %q twice", kind)
		}
		seen[kind] = true
		if c.Handlers[kind] != nil {
			return fmt.Errorf("taskservice: Config.DeclaredKinds names kind %q, which has a handler here; declare only kinds that remote workers serve", kind)
		}
	}
	return nil
}

// DefaultMaxOverlap is the default bound on the overlapping runs of one
// task that are unfinished at once.
const DefaultMaxOverlap = 4

// OverlapLabel labels an overlapping run's task with the id of the task it
// overlaps (Trigger.allow_overlap).
const OverlapLabel = runs.OverlapLabel

// hasHandler reports whether a handler of kind runs in this process (a
// kind without one goes to remote workers).
func (c Config) hasHandler(kind string) bool { return c.Handlers[kind] != nil }

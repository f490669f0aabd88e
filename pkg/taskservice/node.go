package taskservice

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Node is one taskd node. Create it with New, then Start and Stop it once.
type Node struct {
	cfg         Config
	log         hclog.Logger
	cli         *clientv3.Client
	store       *pending.Store
	keys        pending.Keys
	idmap       *identity.Map
	ids         *pending.IDSource
	incarnation string
	startedAt   time.Time
	nodesPrefix string

	// life is cancelled by Stop; runCtx is cancelled when in-flight runs
	// must end (after the drain wait).
	life       context.Context
	stopLife   context.CancelFunc
	runCtx     context.Context
	cancelRuns context.CancelFunc
	wg         sync.WaitGroup // owned goroutines (loops, starters)
	runs       sync.WaitGroup // handler goroutines
	slots      chan struct{}  // one per concurrent run

	mu            sync.Mutex
	state         taskdv1.NodeState
	dispatchStart time.Time
	leaseID       clientv3.LeaseID
	renewedAt     time.Time              // last lease renewal acknowledged
	idents        map[string]*identState // durable identities owned here
	local         map[string]*identState // non-durable tasks, by identity
	queue         timerQueue
	wake          chan struct{}
	started       bool
	stopped       bool

	kindsMu sync.Mutex // guards the cluster's kinds, cached
	kinds   map[string]bool
	kindsAt time.Time
}

// New checks cfg and returns a node that has not started.
func New(cfg Config) (*Node, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	var inc [8]byte
	_, _ = rand.Read(inc[:])
	n := &Node{
		cfg:         cfg,
		cli:         cfg.Client,
		keys:        pending.NewKeys(cfg.Prefix),
		store:       pending.NewStore(cfg.Client, pending.NewKeys(cfg.Prefix)),
		idmap:       identity.NewMap(cfg.Client, identity.NewKeys(cfg.Prefix)),
		ids:         pending.NewIDSource(),
		incarnation: hex.EncodeToString(inc[:]),
		nodesPrefix: cfg.Prefix + "nodes/",
		state:       taskdv1.NodeState_NODE_STATE_STARTING,
		idents:      map[string]*identState{},
		local:       map[string]*identState{},
		wake:        make(chan struct{}, 1),
		slots:       make(chan struct{}, cfg.Workers),
	}
	n.log = cfg.Logger.With("node", cfg.Name, "incarnation", n.incarnation)
	n.life, n.stopLife = context.WithCancel(context.Background())
	n.runCtx, n.cancelRuns = context.WithCancel(context.Background())
	return n, nil
}

// Name is the node's stable name.
func (n *Node) Name() string { return n.cfg.Name }

// Incarnation is the random id of this start of the node.
func (n *Node) Incarnation() string { return n.incarnation }

// State is the node's life-cycle state.
func (n *Node) State() taskdv1.NodeState {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state
}

// DispatchStart is when the node began dispatching (zero before RUNNING).
func (n *Node) DispatchStart() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dispatchStart
}

// Kinds lists the kinds this node handles, sorted.
func (n *Node) Kinds() []string {
	kinds := make([]string, 0, len(n.cfg.Handlers))
	for k := range n.cfg.Handlers {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

func (n *Node) etcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, n.cfg.EtcdTimeout)
}

// Start registers the node, resolves what its previous incarnation held
// (SPEC §5.4), and only then starts dispatching and becomes RUNNING. ctx
// bounds the start-up; the node runs until Stop.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	if n.started {
		n.mu.Unlock()
		return errors.New("taskservice: node already started")
	}
	n.started = true
	n.startedAt = time.Now()
	n.mu.Unlock()

	if err := n.register(ctx); err != nil {
		return err
	}
	if err := n.adoptOwned(ctx); err != nil {
		return err
	}
	n.mu.Lock()
	n.state = taskdv1.NodeState_NODE_STATE_RUNNING
	n.dispatchStart = time.Now()
	n.mu.Unlock()
	if err := n.publish(ctx); err != nil {
		return err
	}
	n.wg.Add(2)
	go n.dispatchLoop()
	go n.leaseLoop()
	n.log.Info("node running", "dispatch_start", n.DispatchStart().Format(time.RFC3339Nano),
		"identities", n.ownedCount(), "kinds", n.Kinds())
	return nil
}

func (n *Node) ownedCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.idents)
}

// register grants a lease and writes the node's record under it. A record
// left by an earlier incarnation of the same name is replaced and its lease
// revoked at once, so nothing waits for it to expire.
func (n *Node) register(ctx context.Context) error {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	key := n.nodesPrefix + n.cfg.Name
	old, err := n.cli.Get(cctx, key)
	if err != nil {
		return fmt.Errorf("read registration of %s: %w", n.cfg.Name, err)
	}
	lease, err := n.cli.Grant(cctx, int64((n.cfg.LeaseTTL+time.Second-1)/time.Second))
	if err != nil {
		return fmt.Errorf("grant node lease: %w", err)
	}
	n.mu.Lock()
	n.leaseID = lease.ID
	n.renewedAt = time.Now()
	n.mu.Unlock()
	if err := n.publish(ctx); err != nil {
		return err
	}
	if len(old.Kvs) > 0 && old.Kvs[0].Lease != 0 && clientv3.LeaseID(old.Kvs[0].Lease) != lease.ID {
		var prev storev1.NodeRecord
		_ = proto.Unmarshal(old.Kvs[0].Value, &prev)
		if _, err := n.cli.Revoke(cctx, clientv3.LeaseID(old.Kvs[0].Lease)); err != nil && !isLeaseNotFound(err) {
			n.log.Warn("revoke lease of previous incarnation", "previous", prev.Incarnation, "error", err)
		} else {
			n.log.Info("freed previous incarnation", "previous", prev.Incarnation)
		}
	}
	return nil
}

func isLeaseNotFound(err error) bool { return errors.Is(err, rpctypes.ErrLeaseNotFound) }

// publish writes the node's record under its lease.
func (n *Node) publish(ctx context.Context) error {
	n.mu.Lock()
	rec := &storev1.NodeRecord{
		Name:        n.cfg.Name,
		Incarnation: n.incarnation,
		Address:     n.cfg.Address,
		State:       n.state,
		StartedAt:   timestamppb.New(n.startedAt),
		Kinds:       n.Kinds(),
	}
	if !n.dispatchStart.IsZero() {
		rec.DispatchStart = timestamppb.New(n.dispatchStart)
	}
	lease := n.leaseID
	n.mu.Unlock()
	b, err := proto.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode node record: %w", err)
	}
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	if _, err := n.cli.Put(cctx, n.nodesPrefix+n.cfg.Name, string(b), clientv3.WithLease(lease)); err != nil {
		return fmt.Errorf("register node %s: %w", n.cfg.Name, err)
	}
	return nil
}

// leaseLoop keeps the lease alive and self-fences: when no renewal has been
// acknowledged for two thirds of the TTL the node stops starting runs, well
// before the lease can expire (SPEC §2.4). If the lease is lost the node
// registers again and re-adopts its identities under new epochs.
func (n *Node) leaseLoop() {
	defer n.wg.Done()
	for n.life.Err() == nil {
		n.mu.Lock()
		lease := n.leaseID
		n.mu.Unlock()
		kctx, cancel := context.WithCancel(n.life)
		ch, err := n.cli.KeepAlive(kctx, lease)
		if err == nil {
			n.consumeKeepAlive(ch)
		}
		cancel()
		if n.life.Err() != nil {
			return
		}
		n.log.Warn("node lease lost; fencing and registering again", "error", err)
		n.fence()
		n.rejoin()
	}
}

func (n *Node) consumeKeepAlive(ch <-chan *clientv3.LeaseKeepAliveResponse) {
	check := time.NewTicker(n.cfg.LeaseTTL / 10)
	defer check.Stop()
	for {
		select {
		case resp, ok := <-ch:
			if !ok || resp == nil {
				return
			}
			n.mu.Lock()
			n.renewedAt = time.Now()
			n.mu.Unlock()
			n.kick()
		case <-check.C:
			if !n.leaseFresh() {
				n.kick()
			}
		case <-n.life.Done():
			return
		}
	}
}

// leaseFresh reports whether the lease was renewed recently enough to start
// a run: within two thirds of its TTL.
func (n *Node) leaseFresh() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return time.Since(n.renewedAt) < n.cfg.LeaseTTL*2/3
}

// fence forgets every identity: runs in flight will fail their commits, and
// nothing new starts until the identities are adopted again.
func (n *Node) fence() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, st := range n.idents {
		n.dropIdentityLocked(st)
	}
}

// rejoin registers again and re-adopts the identities still mapped to this
// name, retrying until it succeeds or the node stops.
func (n *Node) rejoin() {
	backoff := 100 * time.Millisecond
	for n.life.Err() == nil {
		err := n.register(n.life)
		if err == nil {
			err = n.adoptOwned(n.life)
		}
		if err == nil {
			n.log.Info("rejoined after losing the lease", "identities", n.ownedCount())
			return
		}
		n.log.Warn("rejoin failed; retrying", "error", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-n.life.Done():
			return
		}
		if backoff < 2*time.Second {
			backoff *= 2
		}
	}
}

// Stop stops dispatching, waits for runs in flight until ctx is done, then
// cancels them (they end INTERRUPTED and, with requests_recovery, run again
// on the next start), marks the node STOPPED and revokes its lease. The
// identities stay mapped to the node's name for its next start.
func (n *Node) Stop(ctx context.Context) error {
	n.mu.Lock()
	if n.stopped {
		n.mu.Unlock()
		return nil
	}
	n.stopped = true
	wasStarted := n.started
	n.mu.Unlock()
	n.stopLife()
	n.kick()
	n.wg.Wait()

	done := make(chan struct{})
	go func() { n.runs.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		n.log.Warn("stop: cancelling runs still in flight")
		n.cancelRuns()
		<-done
	}
	n.cancelRuns()
	if !wasStarted {
		return nil
	}
	n.mu.Lock()
	n.state = taskdv1.NodeState_NODE_STATE_STOPPED
	lease := n.leaseID
	n.mu.Unlock()
	var errs []error
	bg := context.Background()
	if err := n.publish(bg); err != nil {
		errs = append(errs, err)
	}
	cctx, cancel := n.etcdCtx(bg)
	defer cancel()
	if _, err := n.cli.Revoke(cctx, lease); err != nil {
		errs = append(errs, fmt.Errorf("revoke node lease: %w", err))
	}
	n.log.Info("node stopped")
	return errors.Join(errs...)
}

// kick wakes the dispatcher.
func (n *Node) kick() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *Node) emit(ev Event) {
	if len(n.cfg.Listeners) == 0 {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	ev.Node = n.cfg.Name
	for _, l := range n.cfg.Listeners {
		func() {
			defer func() {
				if r := recover(); r != nil {
					n.log.Error("event listener panicked", "event", string(ev.Type), "panic", fmt.Sprint(r))
				}
			}()
			l(ev)
		}()
	}
}

package membership

import (
	"context"
	"crypto/tls"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/writepath"
)

// Node is what a Member needs of the node it keeps registered. The Member
// calls these without holding its own mutex; each may take the node's lock.
type Node interface {
	// Record encodes the node's record (its registration's value) as it
	// stands now.
	Record() ([]byte, error)
	// Registered is called once a registration under a new lease is
	// written, before Register returns: the node rewrites what it keeps
	// under the lease. Its error fails the registration.
	Registered(ctx context.Context) error
	// Fence is called once the lease is lost: the node forgets every
	// identity and cancels the runs in flight (their outcomes can no longer
	// be committed), so that nothing starts until it holds them again.
	Fence()
	// Rejoined is called after the node registered again under a new lease,
	// having lost the old one: the node re-adopts the identities still
	// mapped to its name. Its error makes the Member register again.
	Rejoined(ctx context.Context) error
	// Renewed is called after each acknowledged renewal: runs held back
	// while the lease was not proven may start.
	Renewed()
	// Stopping reports whether the node is stopping: a lease lost then is
	// not taken again.
	Stopping() bool
	// Replaced is called when another incarnation of the node's name took
	// the registration while this one had lost its lease: the node stops.
	// It is called from Run, which returns right after.
	Replaced(err error)
}

// Config says which node a Member keeps registered, and how.
type Config struct {
	Client      *clientv3.Client
	Prefix      string // the cluster's key prefix
	Name        string // the node's stable name
	Incarnation string // this start of the node
	TTL         time.Duration
	EtcdTimeout time.Duration // bounds each etcd call
	// Replace takes the name over from a live incarnation, instead of
	// refusing with ErrNameInUse.
	Replace bool
	PeerTLS *tls.Config // how the liveness probe dials an earlier incarnation
	Logger  hclog.Logger
	Node    Node
	// Now is the clock of the renewals' send times and of Fresh; nil is
	// time.Now (tests set a fake one).
	Now func() time.Time
}

// Member is the registration and the lease of one node. Create it with New;
// Register it, then Run its renewals until the node no longer needs the
// lease.
type Member struct {
	cfg    Config
	shapes writepath.Shapes
	writer writepath.Writer
	wake   chan struct{} // ask Run to renew now (Check)

	publishMu sync.Mutex // one rewrite of the record at a time (Publish)

	mu        sync.Mutex
	lease     clientv3.LeaseID // the lease of the current registration
	rev       int64            // revision of the current registration: owned epochs are newer
	renewedAt time.Time        // when the last acknowledged renewal (or the grant) was sent
}

// New returns a Member of the node cfg names, not registered yet.
func New(cfg Config) *Member {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Member{
		cfg:    cfg,
		shapes: writepath.NewShapes(cfg.Prefix, cfg.Name),
		writer: writepath.NewWriter(cfg.Client),
		wake:   make(chan struct{}, 1),
	}
}

// Key is the key of the node's registration.
func (m *Member) Key() string { return m.shapes.Registration() }

// Lease is the lease of the current registration (0 before the first).
func (m *Member) Lease() clientv3.LeaseID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease
}

// RegisteredRev is the revision at which the current registration was
// written (0 before the first): an identity mapped to the node at an older
// revision was mapped under an earlier registration.
func (m *Member) RegisteredRev() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rev
}

// Registration is the current registration's lease and revision, read
// together: they change together, once a new registration is written.
func (m *Member) Registration() (clientv3.LeaseID, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease, m.rev
}

// Margin is how long after an acknowledged renewal was sent the node may
// still start runs: two thirds of the TTL, leaving a third for clock rate
// differences and for the start itself.
func (m *Member) Margin() time.Duration { return m.cfg.TTL * 2 / 3 }

// Fresh reports whether a run may start: the last acknowledged renewal was
// sent within the margin.
func (m *Member) Fresh() bool {
	_, fresh := m.Renewal()
	return fresh
}

// Renewal is when the last acknowledged renewal was sent, and whether that
// is within the margin (Fresh), read together.
func (m *Member) Renewal() (sent time.Time, fresh bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.renewedAt, m.cfg.Now().Sub(m.renewedAt) < m.Margin()
}

// Deadline is when the node can no longer prove its lease live unless a
// renewal is acknowledged meanwhile: the last acknowledged renewal's send
// time plus the margin.
func (m *Member) Deadline() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.renewedAt.Add(m.Margin())
}

// RegisteredCmp holds while the node's registration is still under its
// current lease. Every Txn that maps an identity to the node carries it: a
// replaced or expired incarnation can then never map an identity to itself
// (where nothing would run its tasks).
func (m *Member) RegisteredCmp() clientv3.Cmp {
	return m.shapes.Registered(writepath.Lease(m.Lease()))
}

// Owns reports whether a read of the node's registration (in a Txn's Else
// branch) shows it under the current lease.
func (m *Member) Owns(r *clientv3.GetResponse) bool {
	lease := m.Lease()
	return len(r.Kvs) > 0 && r.Kvs[0].Lease == int64(lease)
}

// Check asks Run to renew now and to look at the registration itself, so
// that a lost lease or registration is noticed (and the node registers
// again) without waiting for the next renewal.
func (m *Member) Check() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// renewed records an acknowledged renewal sent at sent; an older one
// acknowledged late does not move the clock back.
func (m *Member) renewed(sent time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sent.After(m.renewedAt) {
		m.renewedAt = sent
	}
}

func (m *Member) etcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, m.cfg.EtcdTimeout)
}

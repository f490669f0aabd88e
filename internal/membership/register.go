package membership

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/backoff"
	"github.com/taskd/taskd/internal/writepath"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// ErrReplaced reports that another incarnation took over the node's name.
var ErrReplaced = errors.New("replaced by a newer incarnation of the same name")

// ErrRegistrationGone reports that the node's record is no longer under
// its lease: the lease lapsed, or another incarnation wrote the record.
var ErrRegistrationGone = errors.New("the record is no longer under this node's lease")

// Register grants a lease and writes the node's record under it. A record
// left by an earlier incarnation of the same name is replaced and its lease
// revoked at once, so nothing waits for it to expire, unless that
// incarnation is still live (liveness.go): then Register refuses with
// ErrNameInUse, or with Config.Replace takes the name over (the replaced
// process finds its lease gone and stops). Node.Registered is called once
// the record is written, and its error returned.
func (m *Member) Register(ctx context.Context) error { return m.register(ctx, false) }

// register is Register; when rejoining (the node lost its own lease), a
// record of another incarnation is left alone and ErrReplaced returned.
func (m *Member) register(ctx context.Context, rejoining bool) error {
	cctx, cancel := m.etcdCtx(ctx)
	defer cancel()
	name, inc := m.cfg.Name, m.cfg.Incarnation
	old, err := m.cfg.Client.Get(cctx, m.Key())
	if err != nil {
		return fmt.Errorf("read registration of %s: %w", name, err)
	}
	var prev storev1.NodeRecord
	oldRev := int64(0)
	if len(old.Kvs) > 0 {
		_ = proto.Unmarshal(old.Kvs[0].Value, &prev)
		oldRev = old.Kvs[0].ModRevision
		if rejoining && prev.Incarnation != inc {
			return fmt.Errorf("node %s: %w (%s)", name, ErrReplaced, prev.Incarnation)
		}
		if !rejoining && prev.Incarnation != inc && !m.cfg.Replace {
			if err := m.refuseLive(cctx, &prev, clientv3.LeaseID(leaseOf(old))); err != nil {
				return err
			}
		}
	}
	sent := m.cfg.Now()
	lease, err := m.cfg.Client.Grant(cctx, int64((m.cfg.TTL+time.Second-1)/time.Second))
	if err != nil {
		return fmt.Errorf("grant node lease: %w", err)
	}
	b, err := m.cfg.Node.Record()
	if err != nil {
		return err
	}
	resp, err := m.writer.Commit(cctx, m.shapes.Register(oldRev, writepath.Lease(lease.ID), b))
	if err != nil {
		return fmt.Errorf("register node %s: %w", name, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("register node %s: another process wrote its record meanwhile", name)
	}
	// The new lease and the registration's revision become the node's
	// together, once the record is written: a start planned before that is
	// fenced on the old lease (and fails); one planned after it, under an
	// epoch older than this registration, is refused until re-mapped.
	m.mu.Lock()
	m.lease = lease.ID
	m.renewedAt = sent
	m.rev = resp.Header.Revision
	m.mu.Unlock()
	if oldLease := clientv3.LeaseID(leaseOf(old)); oldLease != 0 && oldLease != lease.ID {
		if _, err := m.cfg.Client.Revoke(cctx, oldLease); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			m.cfg.Logger.Warn("revoke lease of previous incarnation", "previous", prev.Incarnation, "error", err)
		} else if prev.Incarnation != inc {
			m.cfg.Logger.Info("freed previous incarnation", "previous", prev.Incarnation)
		}
	}
	// What the node keeps under its lease was under the old one (or none,
	// before the first registration).
	return m.cfg.Node.Registered(ctx)
}

// Publish rewrites the node's record (its state changed), only while the
// record is still under the node's lease; ErrRegistrationGone if it is not.
func (m *Member) Publish(ctx context.Context) error {
	// One publish at a time: each puts the record as it stands when
	// encoded, so a later one must not be overtaken by an earlier one.
	m.publishMu.Lock()
	defer m.publishMu.Unlock()
	b, err := m.cfg.Node.Record()
	if err != nil {
		return err
	}
	lease := m.Lease()
	cctx, cancel := m.etcdCtx(ctx)
	defer cancel()
	resp, err := m.writer.Commit(cctx, m.shapes.Publish(writepath.Lease(lease), b))
	if err != nil {
		return fmt.Errorf("publish node %s: %w", m.cfg.Name, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("publish node %s: %w", m.cfg.Name, ErrRegistrationGone)
	}
	return nil
}

// Revoke revokes the current lease: the registration and every key under
// the lease go. It returns etcd's error as it is (rpctypes.ErrLeaseNotFound
// for a lease already gone). Call it once Run has returned.
func (m *Member) Revoke(ctx context.Context) error {
	lease := m.Lease()
	cctx, cancel := m.etcdCtx(ctx)
	defer cancel()
	_, err := m.cfg.Client.Revoke(cctx, lease)
	return err
}

// rejoin registers again and has the node re-adopt its identities,
// retrying until it succeeds, ctx ends, or the node was replaced
// (ErrReplaced).
func (m *Member) rejoin(ctx context.Context) error {
	bo := backoff.New(100*time.Millisecond, 2*time.Second)
	for ctx.Err() == nil {
		err := m.register(ctx, true)
		if errors.Is(err, ErrReplaced) {
			return err
		}
		if err == nil {
			err = m.cfg.Node.Rejoined(ctx)
		}
		if err == nil {
			return nil
		}
		m.cfg.Logger.Warn("rejoin failed; retrying", "error", err)
		if !bo.Wait(ctx) {
			return nil
		}
	}
	return nil
}

func leaseOf(resp *clientv3.GetResponse) int64 {
	if len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].Lease
}

package membership

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Run renews the lease every quarter of its TTL until ctx ends. A renewal
// that fails for a while makes the node stop starting runs (Fresh turns
// false); a lease that etcd no longer knows makes the node forget its
// identities (Node.Fence) and register again (rejoin). If another
// incarnation of the same name registered meanwhile, the node is told it
// was replaced (Node.Replaced) and Run returns. A lease lost while the node
// stops (Node.Stopping) is not taken again.
func (m *Member) Run(ctx context.Context) {
	every := m.cfg.TTL / 4
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		verify := false
		select {
		case <-timer.C:
		case <-m.wake:
			// A start found the registration not under this node's lease:
			// renew now, and look at the registration itself too.
			verify = true
			if !timer.Stop() {
				<-timer.C
			}
		case <-ctx.Done():
			return
		}
		lease := m.Lease()
		sent := m.cfg.Now()
		kctx, cancel := context.WithTimeout(ctx, every)
		resp, err := m.cfg.Client.KeepAliveOnce(kctx, lease)
		cancel()
		if err == nil && resp.TTL > 0 && verify && !m.registrationHeld(ctx, lease) {
			resp.TTL = 0 // the lease lives on, but the registration is gone: rejoin
		}
		switch {
		case err == nil && resp.TTL > 0:
			m.renewed(sent)
			m.cfg.Node.Renewed()
		case ctx.Err() != nil:
			return
		case errors.Is(err, rpctypes.ErrLeaseNotFound) || (err == nil && resp.TTL <= 0):
			if m.cfg.Node.Stopping() {
				// Stopping: the runs still in flight can no longer commit;
				// they are cancelled, and nothing registers again.
				m.cfg.Logger.Warn("node lease lost while stopping; cancelling the runs in flight")
				m.cfg.Node.Fence()
				return
			}
			m.cfg.Logger.Warn("node lease lost; forgetting identities and registering again")
			m.cfg.Node.Fence()
			if err := m.rejoin(ctx); err != nil {
				m.cfg.Logger.Error("node stops", "reason", err)
				m.cfg.Node.Replaced(err)
				return
			}
		default:
			m.cfg.Logger.Warn("lease renewal failed", "error", err, "fresh", m.Fresh())
		}
		timer.Reset(every)
	}
}

// registrationHeld reports whether the node's registration is under lease;
// true too when it cannot be read (the renewal decides then).
func (m *Member) registrationHeld(ctx context.Context, lease clientv3.LeaseID) bool {
	cctx, cancel := m.etcdCtx(ctx)
	defer cancel()
	resp, err := m.cfg.Client.Get(cctx, m.Key())
	if err != nil {
		return true
	}
	return len(resp.Kvs) > 0 && resp.Kvs[0].Lease == int64(lease)
}

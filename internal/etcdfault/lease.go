package etcdfault

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// leaseWrapper judges Grant, Revoke and KeepAliveOnce calls. TimeToLive,
// Leases and the KeepAlive stream pass unharmed. Lease calls touch no key,
// so only rules without a Prefix match them.
type leaseWrapper struct {
	in    *Injector
	lease clientv3.Lease
}

func (w *leaseWrapper) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	return perform(ctx, w.in.judge(Call{Op: OpGrant}), func(ctx context.Context) (*clientv3.LeaseGrantResponse, error) {
		return w.lease.Grant(ctx, ttl)
	})
}

func (w *leaseWrapper) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	return perform(ctx, w.in.judge(Call{Op: OpRevoke}), func(ctx context.Context) (*clientv3.LeaseRevokeResponse, error) {
		return w.lease.Revoke(ctx, id)
	})
}

func (w *leaseWrapper) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	return perform(ctx, w.in.judge(Call{Op: OpKeepAliveOnce}), func(ctx context.Context) (*clientv3.LeaseKeepAliveResponse, error) {
		return w.lease.KeepAliveOnce(ctx, id)
	})
}

func (w *leaseWrapper) TimeToLive(ctx context.Context, id clientv3.LeaseID, opts ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	return w.lease.TimeToLive(ctx, id, opts...)
}

func (w *leaseWrapper) Leases(ctx context.Context) (*clientv3.LeaseLeasesResponse, error) {
	return w.lease.Leases(ctx)
}

func (w *leaseWrapper) KeepAlive(ctx context.Context, id clientv3.LeaseID) (<-chan *clientv3.LeaseKeepAliveResponse, error) {
	return w.lease.KeepAlive(ctx, id)
}

func (w *leaseWrapper) Close() error { return w.lease.Close() }

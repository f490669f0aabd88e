package identity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Leadership is one holding of a leader key. Every write a leader makes
// must carry Fence in its Txn: a leader that lost the key (its lease
// expired, it was partitioned) then cannot write, whatever it believes.
type Leadership struct {
	Key string
	// Rev is the key's create revision for this holding.
	Rev int64
}

// Fence is the compare that holds only while this holding lasts.
func (l Leadership) Fence() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(l.Key), "=", l.Rev)
}

// Claim is the write of a campaign for a leader key: it creates the key
// under the campaigner's lease only if the key is absent, and else reads
// it (its one Else response). writepath.Shapes.Claim builds it.
type Claim func(ctx context.Context) (*clientv3.TxnResponse, error)

// Campaign blocks until the caller holds key under lease, or ctx ends.
// The key is created only if absent (claim), so at most one holder exists;
// when the holder's lease ends the key goes with it and a waiting
// campaigner takes it. Each etcd call is bounded by timeout. It returns an
// error wrapping rpctypes.ErrLeaseNotFound if lease has expired.
func Campaign(ctx context.Context, cli *clientv3.Client, claim Claim, key string, lease clientv3.LeaseID, timeout time.Duration) (Leadership, error) {
	for {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		resp, err := claim(cctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return Leadership{}, ctx.Err()
			}
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				// The caller's lease is gone: it must campaign with its new one.
				return Leadership{}, fmt.Errorf("campaign for %s: %w", key, err)
			}
			select {
			case <-time.After(timeout / 5):
				continue
			case <-ctx.Done():
				return Leadership{}, ctx.Err()
			}
		}
		if resp.Succeeded {
			return Leadership{Key: key, Rev: resp.Header.Revision}, nil
		}
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) > 0 && clientv3.LeaseID(kvs[0].Lease) == lease {
			return Leadership{Key: key, Rev: kvs[0].CreateRevision}, nil // already ours
		}
		if err := waitDeleted(ctx, cli, key, resp.Header.Revision, timeout); err != nil {
			return Leadership{}, err
		}
	}
}

// waitDeleted returns once key is deleted after rev (or after a while, so
// the caller looks again in case the watch missed it).
func waitDeleted(ctx context.Context, cli *clientv3.Client, key string, rev int64, recheck time.Duration) error {
	wctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), 4*recheck)
	defer cancel()
	for resp := range cli.Watch(wctx, key, clientv3.WithRev(rev+1)) {
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypeDelete {
				return nil
			}
		}
		if resp.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("campaign for %s: %w", key, ctx.Err())
	}
	return nil
}

// Lost returns once the holding l has ended (the key was deleted or
// re-created), or ctx ends.
func Lost(ctx context.Context, cli *clientv3.Client, l Leadership, timeout time.Duration) {
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		resp, err := cli.Get(cctx, l.Key)
		cancel()
		if err == nil {
			if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != l.Rev {
				return
			}
			if waitDeleted(ctx, cli, l.Key, resp.Header.Revision, timeout) == nil && ctx.Err() == nil {
				continue // deleted, or time to look again
			}
			return
		}
		select {
		case <-time.After(timeout / 5):
		case <-ctx.Done():
		}
	}
}

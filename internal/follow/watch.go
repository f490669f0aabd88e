package follow

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdwatch"
	"github.com/taskd/taskd/internal/keyspace"
)

// Watch is what every follower needs to read and follow its keys.
type Watch struct {
	Client      *clientv3.Client
	Keys        keyspace.Keys
	EtcdTimeout time.Duration // bounds each list
	// MaxWait is the longest wait between failed lists (the node's
	// HandoffPeriod); the first wait is 50 ms, or MaxWait if shorter.
	MaxWait time.Duration
	Logger  hclog.Logger
}

// Follow runs f over w's client until ctx ends: a list that fails is tried
// again after about 50 ms, the waits growing to MaxWait, and a broken
// watch is logged (at debug: the list that follows repairs it). It is the
// one loop of the followers here, and of the node's other watches (the
// ownership index, the registrations) and the tokens' follower.
func (w Watch) Follow(ctx context.Context, what string, f etcdwatch.Follower) {
	f.Client = w.Client
	f.Initial = min(50*time.Millisecond, w.MaxWait)
	f.Max = w.MaxWait
	f.Broken = func(err error) {
		w.Logger.Debug("watch broken; listing again", "watch", what, "error", err)
	}
	f.Run(ctx)
}

// prefixFollower is the Load and Run of a follower of every key under one
// prefix: load lists, and run follows the keys from the revision of the
// last list (listing first if there was none), listing again after every
// break of the watch.
type prefixFollower struct {
	w      Watch
	what   string // names the watch in the log
	prefix string
	// list reads the keys and hands them to the follower, and returns the
	// revision it read at.
	list func(ctx context.Context) (int64, error)
	// events hands the follower the events of one watch response.
	events func(ctx context.Context, evs []*clientv3.Event)

	listedAt atomic.Int64 // the revision of the last list; run watches after it
}

func (f *prefixFollower) load(ctx context.Context) error {
	_, err := f.listed(ctx)
	return err
}

func (f *prefixFollower) run(ctx context.Context) {
	f.w.Follow(ctx, f.what, etcdwatch.Follower{
		Key:     f.prefix,
		Options: []clientv3.OpOption{clientv3.WithPrefix()},
		FromRev: f.listedAt.Load(),
		List:    f.listed,
		Events:  f.events,
	})
}

// listed is list, recording the revision it read at.
func (f *prefixFollower) listed(ctx context.Context) (int64, error) {
	rev, err := f.list(ctx)
	if err == nil {
		f.listedAt.Store(rev)
	}
	return rev, err
}

// keyEvents hands each event of evs, in order, to deleted (a delete) or
// put (a put, with its key-value), with the two parts split parses its key
// into; an event whose key does not parse is passed over.
func keyEvents(evs []*clientv3.Event, split func(key string) (string, string, error),
	deleted func(a, b string), put func(a, b string, kv *mvccpb.KeyValue)) {
	for _, ev := range evs {
		a, b, err := split(string(ev.Kv.Key))
		if err != nil {
			continue
		}
		if ev.Type == clientv3.EventTypeDelete {
			deleted(a, b)
		} else {
			put(a, b, ev.Kv)
		}
	}
}

func (w Watch) etcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, w.EtcdTimeout)
}

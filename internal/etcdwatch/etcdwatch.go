// Package etcdwatch follows a key or a prefix of etcd: it lists it, watches
// it from the list's revision on, and lists again after any break.
//
// Guarantee: every change after the revision of the latest successful list
// is delivered at least once, in revision order within one watch. After any
// break of the watch (an error, a compacted revision, a lost leader, a
// channel that closed) the caller's list function runs again before the
// watch resumes, from the new list's revision: a change made between the
// break and the new watch is seen by that list, and one made after it by the
// new watch, so nothing is missed. Run returns when its context ends and
// leaves no goroutine behind.
package etcdwatch

import (
	"context"
	"errors"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/backoff"
)

// errClosed reports a watch channel that closed without an error while the
// follower's context was still live (the client closed, for one).
var errClosed = errors.New("etcdwatch: the watch channel closed")

// Follower is one followed key or prefix. Set the fields, then call Run
// once.
type Follower struct {
	Client *clientv3.Client
	Key    string
	// Options of the watch (clientv3.WithPrefix, WithPrevKV...); Run adds
	// the start revision and requires a leader.
	Options []clientv3.OpOption
	// List reads what the watch will follow (with its own deadline) and
	// returns the revision it read at. It runs before the first watch
	// (unless FromRev is set) and again after every break.
	List func(ctx context.Context) (rev int64, err error)
	// Events is given the events of each watch response, in order.
	Events func(ctx context.Context, evs []*clientv3.Event)
	// FromRev is a revision the caller has already listed at: when not
	// zero the first watch starts after it, without listing.
	FromRev int64
	// Initial and Max bound the waits between failed lists (default 50 ms
	// and 2 s). A watch that breaks before it delivered anything counts as
	// a failure too, so a watch that cannot be kept does not make a busy
	// loop of lists.
	Initial, Max time.Duration
	// Broken, when set, is told why a watch ended (not when ctx ended).
	Broken func(err error)
}

// Run follows the key until ctx ends.
func (f *Follower) Run(ctx context.Context) {
	initial, longest := f.Initial, f.Max
	if initial <= 0 {
		initial = 50 * time.Millisecond
	}
	if longest <= 0 {
		longest = 2 * time.Second
	}
	bo := backoff.New(initial, longest)
	rev := f.FromRev
	for ctx.Err() == nil {
		if rev == 0 {
			r, err := f.List(ctx)
			if err != nil {
				if !bo.Wait(ctx) {
					return
				}
				continue
			}
			rev = r
		}
		delivered, err := f.watch(ctx, rev)
		rev = 0 // list again
		if ctx.Err() != nil {
			return
		}
		if f.Broken != nil {
			f.Broken(err)
		}
		if delivered {
			bo.Reset()
		} else if !bo.Wait(ctx) {
			return
		}
	}
}

// watch watches from rev+1 until the watch breaks or ctx ends, and reports
// whether it delivered any response and why it ended.
func (f *Follower) watch(ctx context.Context, rev int64) (delivered bool, err error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	opts := append(append([]clientv3.OpOption(nil), f.Options...), clientv3.WithRev(rev+1))
	for resp := range f.Client.Watch(wctx, f.Key, opts...) {
		if err := resp.Err(); err != nil {
			return delivered, err
		}
		delivered = true
		if len(resp.Events) > 0 {
			f.Events(ctx, resp.Events)
		}
	}
	return delivered, errClosed
}

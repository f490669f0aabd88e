package handoff

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/etcdwatch"
	"github.com/taskd/taskd/internal/keyspace"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// Entry is one handoff entry as read from a node's area.
type Entry struct {
	Key      string
	Rev      int64 // mod revision: Delete removes this write only
	Identity string
	From     string
	// TaskID names the task to load, or "*" for all the identity's tasks.
	TaskID string
}

// Handler takes an entry; the watcher deletes it when the handler returns
// nil. It must be idempotent: an entry may be delivered more than once
// (by the watch and by a poll).
type Handler func(ctx context.Context, e Entry) error

// BatchHandler takes several entries at once and returns one error per
// entry (nil: taken, and the watcher deletes it). The same rules as for
// Handler hold for each entry. A dead node's identities arrive as thousands
// of entries together: a batch lets the handler read them all in a few
// etcd round trips instead of a few each.
type BatchHandler func(ctx context.Context, es []Entry) []error

// Watcher delivers the entries of one node's handoff area (contract §3.4): it
// watches the area so that an entry is normally picked up at once, and
// polls it every Period starting Start after Run, as the safety net for a
// watch that was lost or fell behind a compaction.
type Watcher struct {
	Client *clientv3.Client
	Keys   keyspace.Keys
	Node   string
	Period time.Duration
	Start  time.Duration
	// NoWatch leaves pick-up to polling alone (for diagnosis and for the
	// test that proves polling is enough).
	NoWatch bool
	Timeout time.Duration // deadline of one etcd call
	// Workers is how many batches are handled at once (default 16).
	Workers int
	// BatchSize bounds the entries of one batch (default 64; it must stay
	// within etcd's --max-txn-ops, as the entries of a batch are deleted by
	// one Txn).
	BatchSize int
	Log       hclog.Logger
	// HandleBatch, when set, takes the entries; otherwise Handle takes them
	// one by one.
	HandleBatch BatchHandler
	Handle      Handler
	// Delete deletes, in one Txn, the entries taken (and those that do not
	// decode), each only while it is still at the revision taken, so that
	// a newer write to the same key stays (writepath.DeleteEach).
	Delete func(ctx context.Context, taken []Taken) error

	mu       sync.Mutex
	inFlight map[string]bool
	slots    chan struct{}
	handlers sync.WaitGroup
}

// Run delivers entries until ctx is cancelled.
func (w *Watcher) Run(ctx context.Context) {
	w.inFlight = map[string]bool{}
	if w.Workers <= 0 {
		w.Workers = 16
	}
	w.slots = make(chan struct{}, w.Workers)
	defer w.handlers.Wait()
	var wg sync.WaitGroup
	if !w.NoWatch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.watchLoop(ctx)
		}()
	}
	w.pollLoop(ctx)
	wg.Wait()
}

func (w *Watcher) pollLoop(ctx context.Context) {
	timer := time.NewTimer(w.Start)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		}
		if _, err := w.poll(ctx); err != nil && ctx.Err() == nil {
			w.Log.Warn("handoff poll failed", "error", err)
		}
		timer.Reset(w.Period)
	}
}

// poll delivers every entry in the area and returns the revision it read at.
func (w *Watcher) poll(ctx context.Context) (int64, error) {
	prefix := w.Keys.Area(w.Node)
	end := clientv3.GetPrefixRangeEnd(prefix)
	from, rev := prefix, int64(0)
	for {
		cctx, cancel := context.WithTimeout(ctx, w.Timeout)
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(500)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := w.Client.Get(cctx, from, opts...)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("list handoff area of %s: %w", w.Node, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		found := make([]rawEntry, 0, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			found = append(found, rawEntry{string(kv.Key), kv.Value, kv.ModRevision})
		}
		w.deliver(ctx, found)
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// watchLoop watches the area; after any break (error, compaction, a lost
// leader) it lists the area again and watches from that list's revision.
func (w *Watcher) watchLoop(ctx context.Context) {
	f := &etcdwatch.Follower{
		Client:  w.Client,
		Key:     w.Keys.Area(w.Node),
		Options: []clientv3.OpOption{clientv3.WithPrefix()},
		List:    w.poll,
		Events: func(ctx context.Context, evs []*clientv3.Event) {
			found := make([]rawEntry, 0, len(evs))
			for _, ev := range evs {
				if ev.Type == clientv3.EventTypePut {
					found = append(found, rawEntry{string(ev.Kv.Key), ev.Kv.Value, ev.Kv.ModRevision})
				}
			}
			w.deliver(ctx, found)
		},
		Initial: 50 * time.Millisecond,
		Max:     2 * time.Second,
		Broken: func(err error) {
			w.Log.Info("handoff watch broken; listing again", "error", err)
		},
	}
	f.Run(ctx)
}

// rawEntry is an entry as read, before decoding.
type rawEntry struct {
	key   string
	value []byte
	rev   int64
}

// deliver hands the entries not already being handled to the handler, in
// batches of up to BatchSize, each on one of the worker slots; the batch's
// goroutine then deletes the entries taken (only the writes delivered).
func (w *Watcher) deliver(ctx context.Context, found []rawEntry) {
	fresh := found[:0:0]
	w.mu.Lock()
	for _, r := range found {
		if !w.inFlight[r.key] {
			w.inFlight[r.key] = true
			fresh = append(fresh, r)
		}
	}
	w.mu.Unlock()
	size := w.BatchSize
	if size <= 0 {
		size = 64
	}
	for len(fresh) > 0 {
		batch := fresh[:min(len(fresh), size)]
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			w.done(fresh)
			return
		}
		fresh = fresh[len(batch):]
		w.handlers.Add(1)
		go func() {
			defer w.handlers.Done()
			defer func() { <-w.slots }()
			defer w.done(batch)
			w.take(ctx, batch)
		}()
	}
}

// done marks entries as no longer being handled.
func (w *Watcher) done(rs []rawEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range rs {
		delete(w.inFlight, r.key)
	}
}

// take handles a batch of entries and deletes those the handler took, and
// those that do not decode, in one Txn: each delete is conditional on the
// entry's revision, so a newer write to the same key stays.
func (w *Watcher) take(ctx context.Context, batch []rawEntry) {
	var es []Entry
	var deletes []Taken
	del := func(key string, rev int64) { deletes = append(deletes, Taken{Key: key, Rev: rev}) }
	for _, r := range batch {
		e, err := decodeEntry(r.key, r.value, r.rev)
		if err != nil {
			w.Log.Error("bad handoff entry; deleting it", "key", r.key, "error", err)
			del(r.key, r.rev)
			continue
		}
		es = append(es, e)
	}
	var errs []error
	if w.HandleBatch != nil && len(es) > 0 {
		errs = w.HandleBatch(ctx, es)
	} else {
		errs = make([]error, len(es))
		for i, e := range es {
			errs[i] = w.Handle(ctx, e)
		}
	}
	for i, e := range es {
		if err := errs[i]; err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				w.Log.Warn("handoff entry not taken; will retry", "identity", e.Identity, "task", e.TaskID, "error", err)
			}
			continue
		}
		del(e.Key, e.Rev)
	}
	if len(deletes) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	if err := w.Delete(cctx, deletes); err != nil && ctx.Err() == nil {
		w.Log.Warn("delete handoff entries", "entries", len(deletes), "error", err)
	}
}

// Taken is an entry taken: its key and the revision it was taken at.
type Taken struct {
	Key string
	Rev int64
}

// decodeEntry decodes the handoff entry stored at key with mod revision rev.
func decodeEntry(key string, value []byte, rev int64) (Entry, error) {
	var rec storev1.HandoffEntry
	if err := proto.Unmarshal(value, &rec); err != nil {
		return Entry{}, fmt.Errorf("decode handoff entry %q: %w", key, err)
	}
	return Entry{Key: key, Rev: rev, Identity: rec.Identity, From: rec.From, TaskID: rec.TaskId}, nil
}

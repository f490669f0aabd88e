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

// Watcher delivers the entries of one node's handoff area (contract §3.4): it
// watches the area so that an entry is normally picked up at once, and
// polls it every Period starting Start after Run, as the safety net for a
// watch that was lost or fell behind a compaction.
type Watcher struct {
	Client *clientv3.Client
	Keys   Keys
	Node   string
	Period time.Duration
	Start  time.Duration
	// NoWatch leaves pick-up to polling alone (for diagnosis and for the
	// test that proves polling is enough).
	NoWatch bool
	Timeout time.Duration // deadline of one etcd call
	// Workers is how many entries are handled at once (default 16): a
	// dead node's identities arrive as thousands of entries together.
	Workers int
	Log     hclog.Logger
	Handle  Handler

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
		for _, kv := range resp.Kvs {
			w.deliver(ctx, string(kv.Key), kv.Value, kv.ModRevision)
		}
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
			for _, ev := range evs {
				if ev.Type == clientv3.EventTypePut {
					w.deliver(ctx, string(ev.Kv.Key), ev.Kv.Value, ev.Kv.ModRevision)
				}
			}
		},
		Initial: 50 * time.Millisecond,
		Max:     2 * time.Second,
		Broken: func(err error) {
			w.Log.Info("handoff watch broken; listing again", "error", err)
		},
	}
	f.Run(ctx)
}

// deliver hands an entry to the handler on one of the worker slots unless
// it is already being handled; the handler's goroutine then deletes it
// (only the write that was delivered).
func (w *Watcher) deliver(ctx context.Context, key string, value []byte, rev int64) {
	w.mu.Lock()
	if w.inFlight[key] {
		w.mu.Unlock()
		return
	}
	w.inFlight[key] = true
	w.mu.Unlock()
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		w.mu.Lock()
		delete(w.inFlight, key)
		w.mu.Unlock()
		return
	}
	w.handlers.Add(1)
	go func() {
		defer w.handlers.Done()
		defer func() { <-w.slots }()
		defer func() {
			w.mu.Lock()
			delete(w.inFlight, key)
			w.mu.Unlock()
		}()
		w.take(ctx, key, value, rev)
	}()
}

// take handles one entry and deletes it if the handler took it.
func (w *Watcher) take(ctx context.Context, key string, value []byte, rev int64) {
	if e, err := decodeEntry(key, value, rev); err != nil {
		w.Log.Error("bad handoff entry; deleting it", "key", key, "error", err)
	} else {
		if err := w.Handle(ctx, e); err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				w.Log.Warn("handoff entry not taken; will retry", "identity", e.Identity, "task", e.TaskID, "error", err)
			}
			return
		}
	}
	cctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	if _, err := w.Client.Txn(cctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
		Then(clientv3.OpDelete(key)).
		Commit(); err != nil && ctx.Err() == nil {
		w.Log.Warn("delete handoff entry", "key", key, "error", err)
	}
}

// decodeEntry decodes the handoff entry stored at key with mod revision rev.
func decodeEntry(key string, value []byte, rev int64) (Entry, error) {
	var rec storev1.HandoffEntry
	if err := proto.Unmarshal(value, &rec); err != nil {
		return Entry{}, fmt.Errorf("decode handoff entry %q: %w", key, err)
	}
	return Entry{Key: key, Rev: rev, Identity: rec.Identity, From: rec.From, TaskID: rec.TaskId}, nil
}

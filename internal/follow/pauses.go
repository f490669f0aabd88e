package follow

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The names By gives the pauses it follows, as a task's PausedBy shows
// them.
const (
	ByIdentity = "identity"
	ByKind     = "kind"
)

// OnPause is what a Pauses tells the node; either may be nil. Each is
// called without the Pauses' mutex, from the goroutine that learned the
// change.
type OnPause struct {
	// Began: a pause began that was not in force here (the node parks
	// the waiting runs it now holds back).
	Began func()
	// Lifted: a pause ended, or the pauses were listed again (Load, the
	// list after a broken watch): an entry a pause held back may be free
	// (the node puts its parked entries back, each asking By again).
	Lifted func()
}

// Pauses follows the pause keys (keyspace.Keys.Pauses): the identity and
// kind pauses in force, each since when. The copy is what parks this node's
// due entries; it is not what makes a pause hold (every start compares the
// pause keys absent in etcd), so it may lag.
type Pauses struct {
	w  Watch
	on OnPause

	mu         sync.RWMutex
	identities map[string]time.Time // by identity: since when
	kinds      map[string]time.Time // by kind: since when

	follow *prefixFollower
}

// NewPauses returns a Pauses that knows no pause until Load.
func NewPauses(w Watch, on OnPause) *Pauses {
	p := &Pauses{w: w, on: on, identities: map[string]time.Time{}, kinds: map[string]time.Time{}}
	p.follow = &prefixFollower{w: w, what: "pauses", prefix: w.Keys.Pauses(), list: p.list, events: p.events}
	return p
}

// By says which of the pauses it follows hold back a task of identity id
// and kind: ByIdentity, ByKind, in that order (nil: neither).
func (p *Pauses) By(id, kind string) []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var by []string
	if _, ok := p.identities[id]; ok {
		by = append(by, ByIdentity)
	}
	if _, ok := p.kinds[kind]; ok {
		by = append(by, ByKind)
	}
	return by
}

// Since is when the pause of identity id (kind empty) or of kind began, as
// this node knows it; false when it knows none.
func (p *Pauses) Since(id, kind string) (time.Time, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	m, key := p.identities, id
	if kind != "" {
		m, key = p.kinds, kind
	}
	since, ok := m[key]
	return since, ok
}

// Learn records a pause of identity id (kind empty) or of kind, since
// since, or with since zero its end, that the node saw in a response before
// the watch brought it (its own write, a failed start's Else).
func (p *Pauses) Learn(id, kind string, since time.Time) {
	p.mu.Lock()
	m, key := p.identities, id
	if kind != "" {
		m, key = p.kinds, kind
	}
	_, known := m[key]
	if since.IsZero() {
		delete(m, key)
	} else {
		m[key] = since
	}
	p.mu.Unlock()
	switch {
	case since.IsZero() && known:
		call(p.on.Lifted)
	case !since.IsZero() && !known:
		call(p.on.Began)
	}
}

// LearnRefusal records the pauses a failed start's Else read
// (writepath.Refusal's PauseIdentity and PauseKind, for a task of identity
// id and kind; either may be nil) and reports whether any is in force.
func (p *Pauses) LearnRefusal(id, kind string, identityPause, kindPause *clientv3.GetResponse) bool {
	found := false
	for i, r := range []*clientv3.GetResponse{identityPause, kindPause} {
		if r == nil || len(r.Kvs) == 0 {
			continue
		}
		_, _, since, err := p.decode(r.Kvs[0].Key, r.Kvs[0].Value)
		if err != nil {
			continue
		}
		found = true
		if i == 0 {
			p.Learn(id, "", since)
		} else {
			p.Learn("", kind, since)
		}
	}
	return found
}

// Load reads every pause in force, makes them the copy, and tells the
// node (Lifted: a pause it knew may be gone). Run watches after it.
func (p *Pauses) Load(ctx context.Context) error { return p.follow.load(ctx) }

// Run follows the pause keys until ctx ends, from the revision of the last
// Load (listing first if there was none).
func (p *Pauses) Run(ctx context.Context) { p.follow.run(ctx) }

// events learns the pauses of one watch response.
func (p *Pauses) events(_ context.Context, evs []*clientv3.Event) {
	keyEvents(evs, p.w.Keys.SplitPause, func(id, kind string) { p.Learn(id, kind, time.Time{}) },
		func(id, kind string, kv *mvccpb.KeyValue) {
			if _, _, since, err := p.decode(kv.Key, kv.Value); err == nil {
				p.Learn(id, kind, since)
			}
		})
}

// list is Load, returning the revision it read at (etcdwatch's List).
func (p *Pauses) list(ctx context.Context) (int64, error) {
	cctx, cancel := p.w.etcdCtx(ctx)
	defer cancel()
	resp, err := p.w.Client.Get(cctx, p.w.Keys.Pauses(), clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("read pauses: %w", err)
	}
	ids, kinds := map[string]time.Time{}, map[string]time.Time{}
	for _, kv := range resp.Kvs {
		id, kind, since, err := p.decode(kv.Key, kv.Value)
		if err != nil {
			p.w.Logger.Error("bad pause key", "key", string(kv.Key), "error", err)
			continue
		}
		if kind != "" {
			kinds[kind] = since
		} else {
			ids[id] = since
		}
	}
	p.mu.Lock()
	p.identities, p.kinds = ids, kinds
	p.mu.Unlock()
	call(p.on.Lifted)
	return resp.Header.Revision, nil
}

// Read reads the pauses in force from etcd (not the copy): the identity
// pauses, then the kind pauses, each by name. ctx bounds it.
func (p *Pauses) Read(ctx context.Context) ([]*taskdv1.Pause, error) {
	resp, err := p.w.Client.Get(ctx, p.w.Keys.Pauses(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var ids, kinds []*taskdv1.Pause
	for _, kv := range resp.Kvs {
		pause := &taskdv1.Pause{}
		if err := proto.Unmarshal(kv.Value, pause); err != nil {
			continue
		}
		if pause.Kind != "" {
			kinds = append(kinds, pause)
		} else {
			ids = append(ids, pause)
		}
	}
	return append(ids, kinds...), nil
}

func (p *Pauses) decode(key, value []byte) (id, kind string, since time.Time, err error) {
	id, kind, err = p.w.Keys.SplitPause(string(key))
	if err != nil {
		return "", "", time.Time{}, err
	}
	pause := &taskdv1.Pause{}
	if err := proto.Unmarshal(value, pause); err != nil {
		return "", "", time.Time{}, fmt.Errorf("decode pause: %w", err)
	}
	return id, kind, pause.GetSince().AsTime(), nil
}

func call(f func()) {
	if f != nil {
		f()
	}
}

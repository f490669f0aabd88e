package tokens

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/etcdwatch"
	"github.com/taskd/taskd/internal/follow"
	"github.com/taskd/taskd/internal/keyspace"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Follower keeps the tokens stored in etcd, following their keys.
//
// Guarantee: once Run has listed the tokens, Lookup answers from a copy that
// holds every change up to the revision Seen reports; WaitSeen blocks until
// a given revision is covered, so the node that wrote a change can answer
// only once its own checks see it.
type Follower struct {
	w follow.Watch

	mu      sync.Mutex
	tokens  map[string]*Token
	loaded  bool
	seen    int64
	changed chan struct{} // closed and replaced whenever seen grows
	hooks   []func()      // called after each change is applied
	// gone remembers the tokens this follower saw deleted, to tell their
	// holders (revoked.go).
	gone goneSet
}

// onChange has fn called after each change of the tokens is applied, on
// the follower's goroutine, before Seen covers it: when WaitSeen returns,
// fn has run for every change up to that revision.
func (f *Follower) onChange(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hooks = append(f.hooks, fn)
}

// apply makes tokens the current set, calls the hooks, then records that
// every change up to rev is applied.
func (f *Follower) apply(tokens map[string]*Token, rev int64) {
	f.mu.Lock()
	if f.loaded {
		// A deletion seen by a watch, or a token missing from a new list.
		f.gone.update(f.tokens, tokens, goneRevoked, time.Now())
	}
	f.tokens = tokens
	f.loaded = true
	hooks := f.hooks
	f.mu.Unlock()
	// Outside f.mu: a hook looks tokens up.
	for _, fn := range hooks {
		fn()
	}
	f.mu.Lock()
	f.advance(rev)
	f.mu.Unlock()
}

// NewFollower returns a follower of the tokens under prefix (the node's
// key prefix). Call Run to fill it.
func NewFollower(cli *clientv3.Client, prefix string) *Follower {
	// Each list within 5 s; the waits between failed lists from 50 ms to 1 s.
	w := follow.Watch{Client: cli, Keys: keyspace.New(prefix), EtcdTimeout: 5 * time.Second, MaxWait: time.Second,
		Logger: hclog.NewNullLogger()}
	return &Follower{w: w, tokens: map[string]*Token{}, changed: make(chan struct{})}
}

// Run follows the tokens until ctx ends, on the loop of the node's
// followers (follow.Watch.Follow): it lists them, watches from there, and
// lists again after any break of the watch.
func (f *Follower) Run(ctx context.Context) {
	f.w.Follow(ctx, "tokens", etcdwatch.Follower{
		Key:     f.w.Keys.Tokens(),
		Options: []clientv3.OpOption{clientv3.WithPrefix()},
		List:    f.list,
		Events:  f.events,
	})
}

func (f *Follower) list(ctx context.Context) (int64, error) {
	lctx, cancel := context.WithTimeout(ctx, f.w.EtcdTimeout)
	defer cancel()
	resp, err := f.w.Client.Get(lctx, f.w.Keys.Tokens(), clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	tokens := make(map[string]*Token, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if t, err := decodeRecord(kv.Value); err == nil && f.w.Keys.Token(t.ID) == string(kv.Key) {
			tokens[t.ID] = t
		}
	}
	f.apply(tokens, resp.Header.Revision)
	return resp.Header.Revision, nil
}

func (f *Follower) events(_ context.Context, evs []*clientv3.Event) {
	f.mu.Lock()
	tokens := make(map[string]*Token, len(f.tokens))
	for k, v := range f.tokens {
		tokens[k] = v
	}
	f.mu.Unlock()
	var rev int64
	for _, ev := range evs {
		rev = max(rev, ev.Kv.ModRevision)
		id, ok := strings.CutPrefix(string(ev.Kv.Key), f.w.Keys.Tokens())
		if !ok {
			continue
		}
		if ev.Type == clientv3.EventTypeDelete {
			delete(tokens, id)
			continue
		}
		if t, err := decodeRecord(ev.Kv.Value); err == nil && t.ID == id {
			tokens[id] = t
		}
	}
	f.apply(tokens, rev)
}

// advance records that every change up to rev is applied; f.mu is held.
func (f *Follower) advance(rev int64) {
	if rev > f.seen {
		f.seen = rev
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// Lookup returns the stored token id, and whether the tokens were listed
// at least once (before that, a stored token cannot be told from none).
func (f *Follower) Lookup(id string) (t *Token, loaded bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokens[id], f.loaded
}

// List returns the stored tokens.
func (f *Follower) List() []*Token {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*Token, 0, len(f.tokens))
	for _, t := range f.tokens {
		out = append(out, t)
	}
	return out
}

// Seen returns the revision up to which changes are applied.
func (f *Follower) Seen() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen
}

// WaitSeen waits until the changes up to rev are applied, or ctx ends.
func (f *Follower) WaitSeen(ctx context.Context, rev int64) error {
	for {
		f.mu.Lock()
		seen, ch := f.seen, f.changed
		f.mu.Unlock()
		if seen >= rev {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("the token follower has not yet seen revision %d (at %d): %w", rev, seen, ctx.Err())
		}
	}
}

// encodeRecord returns the stored form of t.
func encodeRecord(t *Token) ([]byte, error) {
	return proto.Marshal(&storev1.TokenRecord{Token: t.Proto(), SecretSha256: t.Hash[:]})
}

func decodeRecord(value []byte) (*Token, error) {
	rec := &storev1.TokenRecord{}
	if err := proto.Unmarshal(value, rec); err != nil {
		return nil, err
	}
	p := rec.GetToken()
	if len(rec.GetSecretSha256()) != sha256.Size || ValidateID(p.GetId()) != nil {
		return nil, fmt.Errorf("malformed token record")
	}
	t := &Token{
		ID:          p.GetId(),
		Verbs:       verbSet(p.GetVerbs()),
		Scopes:      p.GetIdentities(),
		Source:      taskdv1.TokenSource_TOKEN_SOURCE_ETCD,
		Description: p.GetDescription(),
		CreatedBy:   p.GetCreatedBy(),
	}
	if p.GetCreatedAt() != nil {
		t.CreatedAt = p.GetCreatedAt().AsTime()
	}
	copy(t.Hash[:], rec.GetSecretSha256())
	return t, nil
}

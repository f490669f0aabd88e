package etcdwatch_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/internal/etcdwatch"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// seen is what a follower of the prefix w/ learned: the keys each list
// found, the keys the watch delivered, and why watches broke.
type seen struct {
	mu      sync.Mutex
	lists   [][]string
	watched []string
	breaks  []error
}

func (s *seen) listed(keys []string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists = append(s.lists, keys)
	return len(s.lists)
}

func (s *seen) events(_ context.Context, evs []*clientv3.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range evs {
		if ev.Type == clientv3.EventTypePut {
			s.watched = append(s.watched, string(ev.Kv.Key))
		}
	}
}

func (s *seen) broken(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.breaks = append(s.breaks, err)
}

func (s *seen) snapshot() (lists [][]string, watched []string, breaks []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lists), slices.Clone(s.watched), slices.Clone(s.breaks)
}

// has reports whether key was found by any list or by the watch.
func (s *seen) has(key string) bool {
	lists, watched, _ := s.snapshot()
	if slices.Contains(watched, key) {
		return true
	}
	for _, l := range lists {
		if slices.Contains(l, key) {
			return true
		}
	}
	return false
}

func (s *seen) listCount() int {
	lists, _, _ := s.snapshot()
	return len(lists)
}

// list returns a List function over the prefix w/ that records what it
// found; after the list numbered n it calls then[n] (if set), which may
// write: such a write comes after the list's revision.
func (s *seen) list(cli *clientv3.Client, then map[int]func()) func(ctx context.Context) (int64, error) {
	return func(ctx context.Context) (int64, error) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := cli.Get(cctx, "w/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return 0, err
		}
		var keys []string
		for _, kv := range resp.Kvs {
			keys = append(keys, string(kv.Key))
		}
		if f := then[s.listed(keys)]; f != nil {
			f()
		}
		return resp.Header.Revision, nil
	}
}

// faultyEtcd starts an etcd and returns a client wrapped by a new fault
// injector, for the follower, and a plain one, for the test's writes.
func faultyEtcd(t *testing.T) (in *etcdfault.Injector, cli, plain *clientv3.Client) {
	t.Helper()
	etcd := tst.StartEtcd(t)
	plain, cli = etcd.Client(t), etcd.Client(t)
	in = etcdfault.New()
	in.Wrap(cli)
	return in, cli, plain
}

func put(t *testing.T, cli *clientv3.Client, key string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Put(ctx, key, "v")
	if err != nil {
		t.Errorf("put %s: %v", key, err)
		return 0
	}
	return resp.Header.Revision
}

// run starts f and stops it at cleanup, checking that Run returns.
func run(t *testing.T, f *etcdwatch.Follower) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("Run did not return within 10 s of its context ending")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// The list finds what was there; the watch delivers each later put, in order.
func TestFollowListsThenDeliversEvents(t *testing.T) {
	etcd := tst.StartEtcd(t)
	cli := etcd.Client(t)
	put(t, cli, "w/0")
	s := &seen{}
	run(t, &etcdwatch.Follower{Client: cli, Key: "w/", Options: []clientv3.OpOption{clientv3.WithPrefix()},
		List: s.list(cli, nil), Events: s.events, Broken: s.broken})
	tst.Eventually(t, 10*time.Second, func() bool { return s.listCount() == 1 }, "the first list")
	want := []string{"w/1", "w/2", "w/3"}
	for _, k := range want {
		put(t, cli, k)
	}
	tst.Eventually(t, 10*time.Second, func() bool { _, w, _ := s.snapshot(); return len(w) >= 3 }, "three events")
	lists, watched, breaks := s.snapshot()
	if !slices.Equal(lists[0], []string{"w/0"}) || !slices.Equal(watched, want) || len(lists) != 1 || len(breaks) != 0 {
		t.Fatalf("lists %q, watched %q, breaks %v; want one list of w/0, then w/1..w/3 in order, no break",
			lists, watched, breaks)
	}
}

// A broken watch makes the follower list again before it watches again, and
// nothing is lost: the put that broke the watch (the fault swallows its
// event), a put made after the break and before the list, and a put made
// after the list and before the new watch are all seen.
func TestBrokenWatchListsAgainAndLosesNothing(t *testing.T) {
	in, cli, plain := faultyEtcd(t)
	brk := in.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: "w/break", Times: 1, Action: etcdfault.BreakWatch()})
	s := &seen{}
	// After the second list (the one after the break) and before the new
	// watch starts, write w/gap: only the new watch can deliver it.
	then := map[int]func(){2: func() { put(t, plain, "w/gap") }}
	run(t, &etcdwatch.Follower{Client: cli, Key: "w/", Options: []clientv3.OpOption{clientv3.WithPrefix()},
		List: s.list(cli, then), Events: s.events,
		Broken: func(err error) {
			s.broken(err)
			put(t, plain, "w/afterbreak") // after the break, before the list
		}})
	tst.Eventually(t, 10*time.Second, func() bool { return s.listCount() == 1 }, "the first list")
	put(t, plain, "w/before")
	tst.Eventually(t, 10*time.Second, func() bool { return s.has("w/before") }, "w/before")
	put(t, plain, "w/break")
	tst.Eventually(t, 10*time.Second, func() bool { return s.has("w/gap") }, "w/gap, written between the list and the new watch")
	put(t, plain, "w/last")
	tst.Eventually(t, 10*time.Second, func() bool { return s.has("w/last") }, "w/last")

	lists, watched, breaks := s.snapshot()
	if brk.Hits() != 1 || len(breaks) != 1 || len(lists) != 2 {
		t.Fatalf("hits %d, breaks %v, lists %q; want one break followed by one list", brk.Hits(), breaks, lists)
	}
	if !slices.Contains(lists[1], "w/break") || !slices.Contains(lists[1], "w/afterbreak") {
		t.Fatalf("the list after the break found %q; want w/break and w/afterbreak in it", lists[1])
	}
	if !slices.Equal(watched, []string{"w/before", "w/gap", "w/last"}) {
		t.Fatalf("watched %q; want w/before, w/gap, w/last", watched)
	}
}

// A watch from a revision that was compacted away is refused by etcd; the
// follower lists again and goes on from the new list's revision.
func TestCompactedRevisionListsAgain(t *testing.T) {
	etcd := tst.StartEtcd(t)
	cli := etcd.Client(t)
	old := put(t, cli, "w/old")
	put(t, cli, "w/missed") // after old: only a list can find it once compacted
	last := put(t, cli, "x/other")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Compact(ctx, last); err != nil {
		t.Fatal(err)
	}
	s := &seen{}
	run(t, &etcdwatch.Follower{Client: cli, Key: "w/", Options: []clientv3.OpOption{clientv3.WithPrefix()},
		FromRev: old, List: s.list(cli, nil), Events: s.events, Broken: s.broken})
	tst.Eventually(t, 10*time.Second, func() bool { return s.listCount() == 1 }, "a list after the compacted watch")
	put(t, cli, "w/new")
	tst.Eventually(t, 10*time.Second, func() bool { return s.has("w/new") }, "w/new")
	lists, watched, breaks := s.snapshot()
	if len(breaks) != 1 || !errors.Is(breaks[0], rpctypes.ErrCompacted) {
		t.Fatalf("breaks %v; want one, ErrCompacted", breaks)
	}
	if len(lists) != 1 || !slices.Contains(lists[0], "w/missed") || !slices.Equal(watched, []string{"w/new"}) {
		t.Fatalf("lists %q, watched %q; want one list with w/missed, then w/new watched", lists, watched)
	}
}

// Lists that fail are retried (with backoff) until one succeeds.
func TestFailedListsAreRetried(t *testing.T) {
	in, cli, plain := faultyEtcd(t)
	fail := in.Add(etcdfault.Rule{Op: etcdfault.OpGet, Prefix: "w/", Times: 3, Action: etcdfault.Fail(nil)})
	put(t, plain, "w/0")
	s := &seen{}
	run(t, &etcdwatch.Follower{Client: cli, Key: "w/", Options: []clientv3.OpOption{clientv3.WithPrefix()},
		List: s.list(cli, nil), Events: s.events, Initial: time.Millisecond, Max: 10 * time.Millisecond})
	tst.Eventually(t, 10*time.Second, func() bool { return s.listCount() == 1 }, "a list that succeeds")
	put(t, plain, "w/1")
	tst.Eventually(t, 10*time.Second, func() bool { return s.has("w/1") }, "w/1")
	if fail.Hits() != 3 || !s.has("w/0") {
		t.Fatalf("failed lists %d, w/0 found %v; want 3 failures, then w/0 listed", fail.Hits(), s.has("w/0"))
	}
}

// Run returns once its context ends, whether it is watching or waiting
// between failed lists; goleak (TestMain) checks that nothing of it is left.
func TestRunStopsWithItsContext(t *testing.T) {
	etcd := tst.StartEtcd(t)
	cli := etcd.Client(t)
	t.Run("watching", func(t *testing.T) {
		s := &seen{}
		stop := run(t, &etcdwatch.Follower{Client: cli, Key: "w/", Options: []clientv3.OpOption{clientv3.WithPrefix()},
			List: s.list(cli, nil), Events: s.events})
		tst.Eventually(t, 10*time.Second, func() bool { return s.listCount() == 1 }, "the first list")
		stop()
	})
	t.Run("between failed lists", func(t *testing.T) {
		failed := make(chan struct{}, 1)
		stop := run(t, &etcdwatch.Follower{Client: cli, Key: "w/",
			List: func(context.Context) (int64, error) {
				select {
				case failed <- struct{}{}:
				default:
				}
				return 0, errors.New("list refused")
			},
			Events: func(context.Context, []*clientv3.Event) { t.Error("an event without a watch") },
			// An hour between lists: Run can only return through its context.
			Initial: time.Hour, Max: time.Hour})
		select {
		case <-failed:
		case <-time.After(10 * time.Second):
			t.Fatal("no list within 10 s")
		}
		stop()
	})
}

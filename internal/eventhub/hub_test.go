package eventhub_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/eventhub"
	"github.com/taskd/taskd/internal/keyspace"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

const prefix = "/hub/"

const wait = 10 * time.Second

// startHub runs a Hub over cli until the test ends (or stop is called).
func startHub(t *testing.T, cli *clientv3.Client, buffer, maxStreams int) (h *eventhub.Hub, stop func()) {
	t.Helper()
	life, end := context.WithCancel(context.Background())
	h = eventhub.New(eventhub.Config{Client: cli, Prefix: prefix, Logger: hclog.NewNullLogger(), EtcdTimeout: 5 * time.Second,
		Life: life, Buffer: buffer, MaxStreams: maxStreams})
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Run(life)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { end(); <-done }) }
	t.Cleanup(stop)
	return h, stop
}

// stream is one Watch of a Hub in the background.
type stream struct {
	mu     sync.Mutex
	evs    []*taskdv1.Event
	err    error
	done   chan struct{}
	cancel context.CancelFunc
}

// watch starts a Watch of h from cursor; each send is first let through
// by gate (nil: every send goes at once).
func watch(t *testing.T, h *eventhub.Hub, cursor string, gate <-chan struct{}) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(s.done)
		err := h.Watch(ctx, eventhub.Filter{}, cursor, func(evs []*taskdv1.Event) error {
			if gate != nil {
				<-gate
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			s.evs = append(s.evs, evs...)
			return nil
		})
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
	}()
	t.Cleanup(func() { cancel(); <-s.done })
	return s
}

func (s *stream) kinds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ev := range s.evs {
		out = append(out, ev.Kind)
	}
	return out
}

// end waits for the stream's end and returns its error.
func (s *stream) end(t *testing.T) error {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(wait):
		t.Fatal("the stream did not end")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// pauseKinds pauses kinds first..first+n-1 ("k000"...), one write each,
// and returns their names in order.
func pauseKinds(t *testing.T, cli *clientv3.Client, first, n int) []string {
	t.Helper()
	keys := keyspace.New(prefix)
	var kinds []string
	for i := first; i < first+n; i++ {
		kind := fmt.Sprintf("k%03d", i)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		_, err := cli.Put(ctx, keys.PauseKind(kind), "")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, kind)
	}
	return kinds
}

func streamEnd(t *testing.T, err, want error) *eventhub.StreamEndError {
	t.Helper()
	var se *eventhub.StreamEndError
	if !errors.As(err, &se) || !errors.Is(err, want) {
		t.Fatalf("the stream ended with %v, want a *StreamEndError of %v", err, want)
	}
	return se
}

// TestHubEndsAStalledReaderWithItsCursor: a reader that stops reading is
// ended once its buffer is full, after it has sent what it took, with the
// cursor of its last event; a stream from that cursor catches up and goes
// on with every later event once, in order.
func TestHubEndsAStalledReaderWithItsCursor(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	h, _ := startHub(t, cli, 256, 8)
	gate := make(chan struct{})
	stalled := watch(t, h, "", gate)
	tst.Eventually(t, wait, func() bool { return h.Subscribers() == 1 }, "the stream to join the hub")
	want := pauseKinds(t, cli, 0, 60)
	tst.Eventually(t, wait, func() bool { return h.Subscribers() == 0 }, "the stalled stream to be ended")
	close(gate)
	se := streamEnd(t, stalled.end(t), eventhub.ErrReaderBehind)
	got := stalled.kinds()
	if len(got) == 0 || len(got) >= len(want) {
		t.Fatalf("the stalled stream sent %d of %d events before its end", len(got), len(want))
	}
	stalled.mu.Lock()
	last := stalled.evs[len(stalled.evs)-1].Cursor
	stalled.mu.Unlock()
	if se.Cursor != last {
		t.Fatalf("ended with cursor %s, want its last event's, %s", se.Cursor, last)
	}

	resumed := watch(t, h, se.Cursor, nil)
	want = append(want, pauseKinds(t, cli, 60, 5)...)
	tst.Eventually(t, wait, func() bool { return len(got)+len(resumed.kinds()) >= len(want) }, "the resumed stream to catch up")
	if all := append(slices.Clone(got), resumed.kinds()...); !slices.Equal(all, want) {
		t.Fatalf("the two streams sent %v, want %v", all, want)
	}
	tst.Eventually(t, wait, func() bool { return h.Subscribers() == 1 }, "the caught-up stream to join the hub")
}

// TestHubStopEndsItsStreams: a Hub that stops ends its streams with
// ErrStreamInterrupted and their cursors, and refuses new ones; so does a
// Hub whose node's life is over.
func TestHubStopEndsItsStreams(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	h, stop := startHub(t, cli, 1<<20, 8)
	live := watch(t, h, "", nil)
	tst.Eventually(t, wait, func() bool { return h.Subscribers() == 1 }, "the stream to join the hub")
	pauseKinds(t, cli, 0, 3)
	tst.Eventually(t, wait, func() bool { return len(live.kinds()) == 3 }, "the stream to send 3 events")
	stop()
	se := streamEnd(t, live.end(t), eventhub.ErrStreamInterrupted)
	live.mu.Lock()
	last := live.evs[2].Cursor
	live.mu.Unlock()
	if se.Cursor != last {
		t.Fatalf("ended with cursor %s, want its last event's, %s", se.Cursor, last)
	}
	streamEnd(t, watch(t, h, se.Cursor, nil).end(t), eventhub.ErrStreamInterrupted)

	life, end := context.WithCancel(context.Background())
	end()
	over := eventhub.New(eventhub.Config{Client: cli, Prefix: prefix, Logger: hclog.NewNullLogger(), EtcdTimeout: 5 * time.Second,
		Life: life, Buffer: 1 << 20, MaxStreams: 8})
	streamEnd(t, watch(t, over, "", nil).end(t), eventhub.ErrStreamInterrupted)
}

// TestHubBoundsItsStreams: past MaxStreams a stream is refused
// (ErrTooManyStreams); one that ends frees its place.
func TestHubBoundsItsStreams(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	h, _ := startHub(t, cli, 1<<20, 1)
	first := watch(t, h, "", nil)
	tst.Eventually(t, wait, func() bool { return h.Subscribers() == 1 }, "the stream to join the hub")
	if err := watch(t, h, "", nil).end(t); !errors.Is(err, eventhub.ErrTooManyStreams) {
		t.Fatalf("a stream past the bound ended with %v, want ErrTooManyStreams", err)
	}
	first.cancel()
	if err := first.end(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled stream ended with %v", err)
	}
	watch(t, h, "", nil)
	tst.Eventually(t, wait, func() bool { return h.Subscribers() == 1 }, "a new stream in the freed place")
}

// TestWatchRefusesBadAndExpiredCursors: a cursor that is none is
// ErrInvalidCursor; one into compacted history ErrCursorExpired.
func TestWatchRefusesBadAndExpiredCursors(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	h, _ := startHub(t, cli, 1<<20, 8)
	if err := watch(t, h, "nope", nil).end(t); !errors.Is(err, eventhub.ErrInvalidCursor) {
		t.Fatalf("a bad cursor ended the stream with %v, want ErrInvalidCursor", err)
	}
	// Once the Hub has offered the writes to a live stream, the compaction
	// is behind its watch: only the cursor's history is lost.
	live := watch(t, h, "", nil)
	tst.Eventually(t, wait, func() bool { return h.Subscribers() == 1 }, "the stream to join the hub")
	pauseKinds(t, cli, 0, 3)
	tst.Eventually(t, wait, func() bool { return len(live.kinds()) == 3 }, "the hub to offer 3 events")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := cli.Get(ctx, "any")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if err := watch(t, h, "2.0", nil).end(t); !errors.Is(err, eventhub.ErrCursorExpired) {
		t.Fatalf("a compacted cursor ended the stream with %v, want ErrCursorExpired", err)
	}
}

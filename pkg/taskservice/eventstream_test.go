package taskservice_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// watcher collects a WatchEvents stream in the background.
type watcher struct {
	mu     sync.Mutex
	evs    []*taskdv1.Event
	err    error
	done   chan struct{}
	cancel context.CancelFunc
}

func watch(t *testing.T, n *tst.Node, req *taskdv1.WatchEventsRequest) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := n.Client.WatchEvents(ctx, req)
	if err != nil {
		cancel()
		t.Fatalf("WatchEvents: %v", err)
	}
	w := &watcher{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(w.done)
		for {
			resp, err := stream.Recv()
			w.mu.Lock()
			if err != nil {
				w.err = err
				w.mu.Unlock()
				return
			}
			w.evs = append(w.evs, resp.Events...)
			w.mu.Unlock()
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *watcher) stop() {
	w.cancel()
	<-w.done
}

func (w *watcher) events() []*taskdv1.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*taskdv1.Event(nil), w.evs...)
}

func (w *watcher) types(taskID string) []taskdv1.EventType {
	var out []taskdv1.EventType
	for _, e := range w.events() {
		if taskID == "" || e.TaskId == taskID {
			out = append(out, e.Type)
		}
	}
	return out
}

func (w *watcher) waitFor(t *testing.T, what string, cond func([]*taskdv1.Event) bool) {
	t.Helper()
	tst.Eventually(t, 10*time.Second, func() bool {
		w.mu.Lock()
		failed := w.err
		w.mu.Unlock()
		if failed != nil && !errors.Is(failed, io.EOF) {
			t.Fatalf("event stream failed: %v", failed)
		}
		return cond(w.events())
	}, "%s", what)
}

func countType(evs []*taskdv1.Event, typ taskdv1.EventType) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

const (
	wsScheduled = taskdv1.EventType_EVENT_TYPE_SCHEDULED
	wsFired     = taskdv1.EventType_EVENT_TYPE_FIRED
	wsStarted   = taskdv1.EventType_EVENT_TYPE_STARTED
	wsSucceeded = taskdv1.EventType_EVENT_TYPE_SUCCEEDED
	wsFailed    = taskdv1.EventType_EVENT_TYPE_FAILED
	wsRetrying  = taskdv1.EventType_EVENT_TYPE_RETRYING
	wsFinalized = taskdv1.EventType_EVENT_TYPE_FINALIZED
	wsDead      = taskdv1.EventType_EVENT_TYPE_DEAD
	wsMoved     = taskdv1.EventType_EVENT_TYPE_MOVED
	wsHandedOff = taskdv1.EventType_EVENT_TYPE_HANDED_OFF
	wsPaused    = taskdv1.EventType_EVENT_TYPE_PAUSED
	wsCanceled  = taskdv1.EventType_EVENT_TYPE_CANCELED
)

// TestEventStreamFromAnyNode: a client watching through node b sees, in
// order, every step of a task that runs on node a, and the identity's move
// and handoff.
func TestEventStreamFromAnyNode(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	c.own("a", "ev")
	w := watch(t, c.nodes["b"], &taskdv1.WatchEventsRequest{Identity: "ev"})
	calls := 0
	var mu sync.Mutex
	c.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if r.Identity == "ev" && calls == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	}
	task := c.schedule("b", spec("ev", "rec", now()))
	want := []taskdv1.EventType{wsScheduled, wsFired, wsStarted, wsFailed, wsRetrying, wsFired, wsStarted, wsSucceeded, wsFinalized}
	w.waitFor(t, "the task's events", func(evs []*taskdv1.Event) bool { return countType(evs, wsFinalized) == 1 })
	if got := w.types(task.Id); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for _, e := range w.events() {
		if e.TaskId != task.Id {
			continue
		}
		if e.Type == wsStarted && (e.Node != "a" || e.RunNumber == 0 || e.Fence == "" || e.Kind != "rec") {
			t.Fatalf("STARTED event %v: want node a, a run number, a fence, kind rec", e)
		}
		if (e.Type == wsStarted || e.Type == wsFired) && (e.FireTime == nil || e.Time.AsTime().Before(e.FireTime.AsTime())) {
			t.Fatalf("%v event %v: want its fire time, not after its time", e.Type, e)
		}
		if e.Cursor == "" {
			t.Fatalf("event without a cursor: %v", e)
		}
	}
	c.move("b", "ev", "b")
	w.waitFor(t, "MOVED and HANDED_OFF", func(evs []*taskdv1.Event) bool {
		return countType(evs, wsMoved) == 1 && countType(evs, wsHandedOff) == 1
	})
	for _, e := range w.events() {
		if (e.Type == wsMoved || e.Type == wsHandedOff) && e.Node != "b" {
			t.Fatalf("%v names node %q, want b", e.Type, e.Node)
		}
	}
}

// TestEventStreamResumesFromACursor: a client that reconnects with the
// cursor of the last event it saw gets every later event once, in order,
// including those that happened while it was away.
func TestEventStreamResumesFromACursor(t *testing.T) {
	h := newHarness(t, nil)
	w1 := watch(t, h.node, &taskdv1.WatchEventsRequest{Identity: "r"})
	first := h.schedule(spec("r", "rec", now()))
	w1.waitFor(t, "the first task's FINALIZED", func(evs []*taskdv1.Event) bool { return countType(evs, wsFinalized) == 1 })
	seen := w1.events()
	w1.stop()
	// Away: more happens.
	second := h.schedule(spec("r", "rec", now()))
	h.waitState("r", second.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	ctx, cancel := rpc()
	defer cancel()
	if _, err := h.node.Client.PauseIdentity(ctx, &taskdv1.PauseIdentityRequest{Identity: "r"}); err != nil {
		t.Fatal(err)
	}
	w2 := watch(t, h.node, &taskdv1.WatchEventsRequest{Identity: "r", Cursor: seen[len(seen)-1].Cursor})
	w2.waitFor(t, "the events missed", func(evs []*taskdv1.Event) bool { return countType(evs, wsPaused) == 1 })
	got := w2.events()
	if fmt.Sprint(w2.types(second.Id)) != fmt.Sprint([]taskdv1.EventType{wsScheduled, wsFired, wsStarted, wsSucceeded, wsFinalized}) {
		t.Fatalf("after reconnect, events of the second task %v", w2.types(second.Id))
	}
	for _, e := range got {
		if e.TaskId == first.Id {
			t.Fatalf("event of the first task delivered again after the cursor: %v", e)
		}
	}
	// Resuming in the middle of one revision's events skips exactly those
	// before the cursor.
	mid := got[1]
	w3 := watch(t, h.node, &taskdv1.WatchEventsRequest{Identity: "r", Cursor: got[0].Cursor})
	w3.waitFor(t, "the replay from the first event's cursor", func(evs []*taskdv1.Event) bool { return len(evs) >= len(got)-1 })
	if e := w3.events()[0]; e.Cursor != mid.Cursor || e.Type != mid.Type {
		t.Fatalf("replay from cursor %s starts with %v (%s), want %v (%s)", got[0].Cursor, e.Type, e.Cursor, mid.Type, mid.Cursor)
	}
}

// TestEventStreamFiltersAndRefusals: filters by type and kind; a bad
// cursor is INVALID_ARGUMENT, one older than the retained history
// OUT_OF_RANGE.
func TestEventStreamFiltersAndRefusals(t *testing.T) {
	h := newHarness(t, func(c *taskservice.Config) { c.Handlers["other"] = c.Handlers["rec"] })
	w := watch(t, h.node, &taskdv1.WatchEventsRequest{Types: []taskdv1.EventType{wsStarted}, Kind: "other"})
	h.schedule(spec("f1", "rec", now()))
	o := h.schedule(spec("f2", "other", now()))
	h.waitState("f2", o.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	w.waitFor(t, "the STARTED event of kind other", func(evs []*taskdv1.Event) bool { return len(evs) >= 1 })
	for _, e := range w.events() {
		if e.Type != wsStarted || e.Kind != "other" {
			t.Fatalf("filtered stream delivered %v of kind %s", e.Type, e.Kind)
		}
	}
	ctx, cancel := rpc()
	defer cancel()
	recv := func(req *taskdv1.WatchEventsRequest) error {
		s, err := h.node.Client.WatchEvents(ctx, req)
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	if err := recv(&taskdv1.WatchEventsRequest{Cursor: "nonsense"}); status.Code(err) != codes.InvalidArgument || !contains(err.Error(), "cursor") {
		t.Fatalf("bad cursor: %v, want INVALID_ARGUMENT naming cursor", err)
	}
	if err := recv(&taskdv1.WatchEventsRequest{Types: []taskdv1.EventType{99}}); status.Code(err) != codes.InvalidArgument || !contains(err.Error(), "types[0]") {
		t.Fatalf("bad type: %v, want INVALID_ARGUMENT naming types[0]", err)
	}
	cli := h.etcd.Client(t)
	resp, err := cli.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if err := recv(&taskdv1.WatchEventsRequest{Cursor: "2.0"}); status.Code(err) != codes.OutOfRange {
		t.Fatalf("compacted cursor: %v, want OUT_OF_RANGE", err)
	}
}

// TestEventStreamRetriesAndDeath: a task that fails every attempt shows
// FAILED and RETRYING per attempt, then DEAD and FINALIZED; a cancel shows
// CANCELED.
func TestEventStreamRetriesAndDeath(t *testing.T) {
	h := newHarness(t, nil)
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error { return errors.New("always") }
	w := watch(t, h.node, &taskdv1.WatchEventsRequest{Identity: "d"})
	s := spec("d", "rec", now())
	s.MaxAttempts = 2
	s.Backoff = &taskdv1.Backoff{}
	task := h.schedule(s)
	w.waitFor(t, "DEAD", func(evs []*taskdv1.Event) bool { return countType(evs, wsFinalized) == 1 })
	want := []taskdv1.EventType{wsScheduled, wsFired, wsStarted, wsFailed, wsRetrying, wsFired, wsStarted, wsFailed, wsDead, wsFinalized}
	if got := w.types(task.Id); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	later := h.schedule(spec("d", "rec", after(time.Hour)))
	ctx, cancel := rpc()
	defer cancel()
	if _, err := h.node.Client.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "d", TaskId: later.Id}); err != nil {
		t.Fatal(err)
	}
	w.waitFor(t, "CANCELED", func(evs []*taskdv1.Event) bool { return countType(evs, wsCanceled) == 1 })
	if _, err := h.node.Client.PauseTask(ctx, &taskdv1.PauseTaskRequest{Identity: "d", TaskId: later.Id}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("pause of a cancelled task: %v, want FAILED_PRECONDITION", err)
	}
}

// ListNodes through the API names the placement leader, one node, and
// each node's lease time left, within its TTL.
func TestListNodesShowsTheLeaderAndLeases(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	var nodes []*taskdv1.Node
	tst.Eventually(t, 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.nodes["a"].Client.ListNodes(ctx, &taskdv1.ListNodesRequest{})
		if err != nil {
			return false
		}
		nodes = resp.Nodes
		leaders := 0
		for _, n := range nodes {
			if n.Leader {
				leaders++
			}
		}
		return len(nodes) == 2 && leaders == 1
	}, "ListNodes does not show one leader of two nodes: %v", nodes)
	for _, n := range nodes {
		left := n.GetLeaseRemaining().AsDuration()
		if left <= 0 || left > 2*time.Second { // newCluster's TTL
			t.Fatalf("node %s: lease remaining %v, want within (0, TTL]", n.Name, left)
		}
	}
}

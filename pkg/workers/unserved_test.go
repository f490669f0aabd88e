package workers_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/taskd/taskd/pkg/client"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// This file tests what a node says about runs that wait for a kind that
// nothing on it serves (taskservice/unserved.go), and Config.DeclaredKinds.

// logLines is a node's log, kept for the test to read, and copied to t.
type logLines struct {
	t  testing.TB
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// count is how many lines hold every one of parts.
func (l *logLines) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for line := range strings.SplitSeq(l.b.String(), "\n") {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			n++
		}
	}
	return n
}

// withLog gives the node an INFO logger into l, and the declared kinds.
func withLog(l *logLines, declared ...string) func(*nodeSetup) {
	return func(s *nodeSetup) {
		s.node = func(c *taskservice.Config) {
			c.Logger = hclog.New(&hclog.LoggerOptions{Name: "taskd", Level: hclog.Info, Output: l})
			c.DeclaredKinds = declared
		}
	}
}

const (
	beginUnserved = "no handler and no connected worker serves the kind"
	beginDeclared = "runs of a declared kind wait for its first worker"
	endUnserved   = "runs of the kind no longer wait for want of a worker"
)

// A kind declared with Config.DeclaredKinds (taskd --kinds) is advertised
// and accepted at schedule time before any worker of it connects; its run
// waits, shown as such (state SCHEDULED, the reason naming the kind, the
// node and the declaration, Stats.WaitingUnserved, one log line), and runs
// once, as run 1, attempt 1, when a worker connects, which ends the
// episode with one more line. A kind neither handled nor declared is
// still refused. Before, the declared kind was refused like any other.
func TestDeclaredKindWaitsVisiblyForItsFirstWorker(t *testing.T) {
	log := &logLines{t: t}
	n, c, ctx := nodeAndClient(t, time.Second, withLog(log, "thumb"))

	if kinds := nodeKinds(t, c, "n1"); !slices.Equal(kinds, []string{"thumb"}) {
		t.Fatalf("n1 advertises %q; want the declared kind", kinds)
	}
	_, _, err := c.Schedule(ctx, spec("ann", "nope"))
	if !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("a kind neither handled nor declared: %v; want INVALID_ARGUMENT naming it", err)
	}
	task, _, err := c.Schedule(ctx, spec("ann", "thumb"))
	if err != nil {
		t.Fatalf("a declared kind with no worker yet: %v", err)
	}
	tst.Eventually(t, 10*time.Second, func() bool {
		got, err := c.Get(ctx, "ann", task.ID)
		return err == nil && got.Waiting != ""
	}, "the run is not shown waiting")
	got, err := c.Get(ctx, "ann", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := `no worker of kind "thumb" (declared by --kinds) has connected to node n1; waiting since `
	if got.State != client.StateScheduled || got.Waiting != "worker" || !strings.HasPrefix(got.WaitingReason, want) ||
		got.RunCount != 0 || got.Attempt != 0 {
		t.Fatalf("waiting run: state %s, waiting %q, reason %q, runs %d, attempt %d; want SCHEDULED, reason %q…",
			got.State, got.Waiting, got.WaitingReason, got.RunCount, got.Attempt, want)
	}
	if s := n.Stats(); s.WaitingUnserved["thumb"] != 1 || s.WaitingForWorker["thumb"] != 1 {
		t.Fatalf("stats: %d unserved, %d waiting for a worker; want 1 and 1", s.WaitingUnserved["thumb"], s.WaitingForWorker["thumb"])
	}
	if got := log.count(beginDeclared, "kind=thumb"); got != 1 {
		t.Fatalf("%d lines %q; want 1", got, beginDeclared)
	}

	w := c.NewWorker(client.WorkerOptions{Name: "late", Discover: 100 * time.Millisecond})
	w.Handle("thumb", func(context.Context, *client.Job) error { return nil })
	runWorker(t, w)
	done, runs := waitRuns(ctx, t, c, "ann", task.ID)
	if done.State != client.StateCompleted || len(runs) != 1 || runs[0].RunNumber != 1 || runs[0].Attempt != 1 {
		t.Fatalf("after the worker came: state %s, runs %+v", done.State, runs)
	}
	tst.Eventually(t, 10*time.Second, func() bool {
		return log.count(endUnserved, "kind=thumb", `reason="a worker of the kind connected"`) == 1
	}, "no line says the wait ended")
	if s := n.Stats(); s.WaitingUnserved["thumb"] != 0 {
		t.Fatalf("%d still unserved", s.WaitingUnserved["thumb"])
	}
}

// Runs that wait for a busy worker are not unserved: their reason says the
// workers are busy, and nothing is logged. When the only worker goes away
// while runs wait, the kind is unserved: one WARN line for the episode
// (however many runs wait), the reason names the kind and the node, and
// Stats.WaitingUnserved counts them; a worker that comes ends it with one
// line, and the runs run. Before, nothing was said at all.
func TestUnservedKindIsSaidOncePerEpisode(t *testing.T) {
	etcd := tst.StartEtcd(t)
	log := &logLines{t: t}
	n := startNode(t, etcd.Client(t), "n1", time.Second, nil, withLog(log))
	c := dialClient(t, n.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// A worker of concurrency 1 that holds its run until it leaves.
	busy := c.NewWorker(client.WorkerOptions{Name: "busy", Concurrency: 1, Discover: 100 * time.Millisecond})
	held := make(chan string, 8)
	busy.Handle("job", func(ctx context.Context, j *client.Job) error {
		held <- j.Identity
		<-ctx.Done()
		return ctx.Err()
	})
	stopBusy := runWorker(t, busy)
	tst.Eventually(t, 10*time.Second, func() bool { return n.pool.Workers() == 1 }, "worker did not connect")
	var tasks []*client.Task
	for i := range 3 {
		task, _, err := c.Schedule(ctx, spec(fmt.Sprintf("id-%d", i), "job", func(s *client.TaskSpec) {
			s.Backoff = client.Backoff{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond}
		}))
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	var first string
	select {
	case first = <-held:
	case <-ctx.Done():
		t.Fatal("no run reached the busy worker")
	}
	tst.Eventually(t, 10*time.Second, func() bool { return n.Stats().WaitingForWorker["job"] == 2 }, "two runs do not wait")
	for _, task := range tasks {
		if task.Spec.Identity == first {
			continue
		}
		got, err := c.Get(ctx, task.Spec.Identity, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := `every connected worker of kind "job" on node n1 is busy; waiting since `; !strings.HasPrefix(got.WaitingReason, want) {
			t.Fatalf("waiting for a busy worker: reason %q; want %q…", got.WaitingReason, want)
		}
	}
	if s := n.Stats(); s.WaitingUnserved["job"] != 0 || log.count(beginUnserved) != 0 {
		t.Fatalf("busy workers: %d unserved, %d lines; want none", s.WaitingUnserved["job"], log.count(beginUnserved))
	}

	// The worker leaves: its run fails and is retried, and all three wait
	// with no worker at all.
	stopBusy()
	tst.Eventually(t, 10*time.Second, func() bool { return n.Stats().WaitingUnserved["job"] == 3 },
		"the runs are not counted unserved: %+v", n.Stats())
	for _, task := range tasks {
		got, err := c.Get(ctx, task.Spec.Identity, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := `no handler or connected worker for kind "job" on node n1; waiting since `; got.State == client.StateRunning ||
			!strings.HasPrefix(got.WaitingReason, want) {
			t.Fatalf("task of %s: state %s, reason %q; want not RUNNING, %q…", task.Spec.Identity, got.State, got.WaitingReason, want)
		}
	}
	if got := log.count("[WARN]", beginUnserved, "kind=job"); got != 1 {
		t.Fatalf("%d WARN lines %q; want 1 for the episode", got, beginUnserved)
	}

	w := c.NewWorker(client.WorkerOptions{Name: "back", Discover: 100 * time.Millisecond})
	w.Handle("job", func(context.Context, *client.Job) error { return nil })
	runWorker(t, w)
	for _, task := range tasks {
		if got, err := c.Wait(ctx, task.Spec.Identity, task.ID); err != nil || got.State != client.StateCompleted {
			t.Fatalf("task of %s: %+v %v", task.Spec.Identity, got, err)
		}
	}
	tst.Eventually(t, 10*time.Second, func() bool { return log.count(endUnserved, "kind=job") == 1 }, "no line says the wait ended")
	if got := log.count(beginUnserved); got != 1 {
		t.Fatalf("%d lines %q; want 1", got, beginUnserved)
	}
}

// A run waiting for a worker takes a cancel, or a pause of its kind, at
// once: it no longer counts as waiting, and the kind's episode ends when
// none of its runs waits (one line); the next run that waits begins a new
// one. Before, a cancelled or paused task went on counting as waiting
// until a worker came.
func TestUnservedEpisodeEndsWhenNoRunWaits(t *testing.T) {
	log := &logLines{t: t}
	n, c, ctx := nodeAndClient(t, time.Second, withLog(log, "thumb"))

	waiting := func(want int) {
		t.Helper()
		tst.Eventually(t, 10*time.Second, func() bool {
			s := n.Stats()
			return s.WaitingUnserved["thumb"] == want && s.WaitingForWorker["thumb"] == want
		}, "want %d waiting: %+v", want, n.Stats())
	}
	a, _, err := c.Schedule(ctx, spec("ann", "thumb"))
	if err != nil {
		t.Fatal(err)
	}
	waiting(1)
	if _, err := c.Cancel(ctx, "ann", a.ID); err != nil {
		t.Fatal(err)
	}
	waiting(0)
	tst.Eventually(t, 10*time.Second, func() bool {
		return log.count(endUnserved, "kind=thumb", `reason="no run of the kind waits here any more"`) == 1
	}, "no line says the wait ended")

	b, _, err := c.Schedule(ctx, spec("bob", "thumb"))
	if err != nil {
		t.Fatal(err)
	}
	waiting(1)
	if got := log.count(beginDeclared, "kind=thumb"); got != 2 {
		t.Fatalf("%d lines %q; want 2, one per episode", got, beginDeclared)
	}
	if _, err := c.PauseKind(ctx, "thumb"); err != nil {
		t.Fatal(err)
	}
	waiting(0)
	got, err := c.Get(ctx, "bob", b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != client.StatePaused || got.Waiting != "" {
		t.Fatalf("paused while waiting: state %s, waiting %q; want PAUSED, not waiting", got.State, got.Waiting)
	}
	if err := c.ResumeKind(ctx, "thumb"); err != nil {
		t.Fatal(err)
	}
	waiting(1)
}

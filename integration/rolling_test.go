package integration

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// rotation is the set of nodes a load generator sends requests to.
type rotation struct {
	mu sync.Mutex
	up []*taskd
}

// client returns the client of the k-th node up (modulo), or nil when none
// is up. The client is made under the lock, so that remove never leaves a
// connection behind.
func (r *rotation) client(k int) (taskdv1.TaskServiceClient, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.up) == 0 {
		return nil, ""
	}
	p := r.up[k%len(r.up)]
	return p.Client(), p.opts.name
}

func (r *rotation) add(p *taskd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.up = append(r.up, p)
}

// remove takes p out of the rotation and closes its client.
func (r *rotation) remove(p *taskd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.up = slices.DeleteFunc(r.up, func(q *taskd) bool { return q == p })
	p.closeClient()
}

// loadGen schedules one-shot tasks due 200 ms ahead, one every 20 ms (about
// 50 a second) round-robin over 50 identities, through whichever nodes are
// in the rotation; a failed request is sent again to another node with the
// same idempotency key, so a request that was stored but not answered is
// not stored twice.
type loadGen struct {
	rot  *rotation
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	accepted []taskRef
	byNode   map[string]int
	retries  map[codes.Code]int
	failures []string
}

func startLoad(rot *rotation) *loadGen {
	g := &loadGen{rot: rot, stop: make(chan struct{}), done: make(chan struct{}),
		byNode: map[string]int{}, retries: map[codes.Code]int{}}
	go g.run()
	return g
}

func (g *loadGen) run() {
	defer close(g.done)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-g.stop:
			return
		case <-tick.C:
		}
		spec := &taskdv1.TaskSpec{
			Identity:       fmt.Sprintf("roll-%02d", seq%50),
			Kind:           "rec",
			Triggers:       onceAfter(200 * time.Millisecond),
			Scope:          taskdv1.Scope_SCOPE_IDENTITY,
			IdempotencyKey: fmt.Sprintf("load-%d", seq),
		}
		var lastErr error
		stored := false
		for attempt := 0; attempt < 50 && !stored; attempt++ {
			c, name := g.rot.client(seq + attempt)
			if c == nil {
				lastErr = fmt.Errorf("no node up")
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec})
			cancel()
			g.mu.Lock()
			if err == nil {
				stored = true
				g.accepted = append(g.accepted, taskRef{spec.Identity, resp.GetTask().GetId()})
				g.byNode[name]++
			} else {
				lastErr = fmt.Errorf("%s: %w", name, err)
				g.retries[status.Code(err)]++
			}
			g.mu.Unlock()
			if status.Code(err) == codes.InvalidArgument {
				break
			}
		}
		if !stored {
			g.mu.Lock()
			g.failures = append(g.failures, fmt.Sprintf("task %d (%s) not accepted: %v", seq, spec.Identity, lastErr))
			g.mu.Unlock()
		}
	}
}

// count is how many tasks were accepted so far.
func (g *loadGen) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.accepted)
}

// waitMore waits until k more tasks than before were accepted.
func (g *loadGen) waitMore(t *testing.T, before, k int) {
	t.Helper()
	eventually(t, waitLong, fmt.Sprintf("%d more tasks accepted", k), func() error {
		if got := g.count() - before; got < k {
			return fmt.Errorf("%d accepted", got)
		}
		return nil
	})
}

// halt stops the generator and waits for it.
func (g *loadGen) halt() {
	close(g.stop)
	<-g.done
}

// TestRollingRestartUnderLoad restarts the three nodes of a cluster one
// after the other with SIGTERM (which drains) while one-shot tasks due
// 200 ms ahead arrive at about 50 a second (contract §3.1: a rolling restart
// delays no run by more than the handoff latency): no accepted task is lost
// or run twice, and none starts more than 3 s after its fire time, which
// would mean a drained node left an identity to the lease-expiry path.
func TestRollingRestartUnderLoad(t *testing.T) {
	// Not parallel: the lateness bound is measured on an unloaded machine.
	cl := newCluster(t, "/rolling/")
	names := []string{"node-a", "node-b", "node-c"}
	procs := make([]*taskd, len(names))
	rot := &rotation{}
	for i, name := range names {
		procs[i] = startNode(t, cl.opts(name))
		rot.add(procs[i])
	}
	load := startLoad(rot)
	stopped := false
	defer func() {
		if !stopped {
			load.halt()
		}
	}()
	load.waitMore(t, 0, 100)

	for i, name := range names {
		p := procs[i]
		before := load.count()
		termAt := time.Now()
		p.Signal(syscall.SIGTERM) // stays in the rotation while it drains
		code, ok := p.waitExit(drainTimeout + 20*time.Second)
		took := time.Since(termAt)
		rot.remove(p)
		if !ok {
			t.Fatalf("%s still running %s after SIGTERM", name, took.Round(time.Millisecond))
		}
		if code != 0 {
			t.Errorf("%s exited with code %d after SIGTERM, want 0", name, code)
		}
		t.Logf("%s: SIGTERM → exit %d in %s (%d tasks accepted meanwhile)", name, code, took.Round(time.Millisecond),
			load.count()-before)
		procs[i] = startNode(t, cl.opts(name))
		rot.add(procs[i])
		load.waitMore(t, load.count(), 25)
	}
	load.waitMore(t, load.count(), 50)
	load.halt()
	stopped = true

	load.mu.Lock()
	accepted := slices.Clone(load.accepted)
	failures := slices.Clone(load.failures)
	t.Logf("load: %d tasks accepted (by node %v), retried requests by code %v", len(accepted), load.byNode, load.retries)
	load.mu.Unlock()
	for _, f := range failures {
		t.Error(f)
	}

	// Zero lost: every accepted task completes with one SUCCESS, executed
	// once.
	c := procs[0].Client()
	seen := map[string]bool{}
	var lateness []time.Duration
	type lateRun struct {
		ref  taskRef
		late time.Duration
		run  *taskdv1.Run
	}
	var worst []lateRun
	for _, r := range accepted {
		if seen[r.id] {
			t.Errorf("task %s/%s accepted twice", r.identity, r.id)
			continue
		}
		seen[r.id] = true
		waitTaskState(t, c, r.identity, r.id, taskdv1.TaskState_TASK_STATE_COMPLETED)
		runs := mustListRuns(t, c, r.identity, r.id)
		if successes(runs) != 1 {
			t.Errorf("task %s/%s: %d SUCCESS entries, want one%s", r.identity, r.id, successes(runs), describeRuns(runs))
		}
		for _, run := range runs {
			if run.GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS {
				continue
			}
			late := run.GetStartedAt().AsTime().Sub(run.GetFireTime().AsTime())
			lateness = append(lateness, late)
			worst = append(worst, lateRun{r, late, run})
		}
	}
	lines := byTask(cl.recLines())
	ranOn := map[string]int{}
	for _, r := range accepted {
		ls := lines[r.id]
		if len(ls) != 1 {
			var s []string
			for _, l := range ls {
				s = append(s, l.String())
			}
			t.Errorf("task %s/%s executed %d times, want once:\n  %s", r.identity, r.id, len(ls), strings.Join(s, "\n  "))
		}
		for _, l := range ls {
			ranOn[l.node]++
		}
	}
	t.Logf("runs by node: %v", ranOn)

	// Zero late beyond the handoff bound.
	slices.Sort(lateness)
	if len(lateness) == 0 {
		t.Fatal("no runs measured")
	}
	maxLate := lateness[len(lateness)-1]
	t.Logf("lateness (started_at - fire_time) of %d runs across the rolling restart: p50 %s, p99 %s, max %s",
		len(lateness), percentile(lateness, 50).Round(time.Millisecond), percentile(lateness, 99).Round(time.Millisecond),
		maxLate.Round(time.Millisecond))
	sort.Slice(worst, func(i, j int) bool { return worst[i].late > worst[j].late })
	for _, w := range worst[:min(3, len(worst))] {
		t.Logf("  late %s: %s/%s on %s, fire %s, started %s", w.late.Round(time.Millisecond), w.ref.identity, w.ref.id,
			w.run.GetNode(), w.run.GetFireTime().AsTime().Format("15:04:05.000"), w.run.GetStartedAt().AsTime().Format("15:04:05.000"))
	}
	if maxLate > 3*time.Second {
		t.Errorf("a run started %s after its fire time during the rolling restart; want at most 3s (draining must hand identities off at once)", maxLate)
	}
}

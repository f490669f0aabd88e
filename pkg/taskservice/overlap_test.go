package taskservice_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestAllowOverlapStartsTheNextFireWhileARunIsInFlight: a periodic task
// that allows overlap and whose runs outlast its interval gets its next
// fire times started as overlapping runs (tasks labelled with its id) while
// its own run is in flight, never more than MaxOverlap of them unfinished
// at once; each fire time runs once; the task's own run ends normally.
func TestAllowOverlapStartsTheNextFireWhileARunIsInFlight(t *testing.T) {
	var mu sync.Mutex
	inFlight, most := 0, 0
	release := make(chan struct{})
	h := newHarness(t, func(c *taskservice.Config) { c.MaxOverlap = 2 })
	h.rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}
	iv := 50 * time.Millisecond
	start := time.Now().Add(iv)
	s := spec("o", "rec", every(start, iv, 6))
	s.AllowOverlap = true
	task := h.schedule(s)
	// The first run and two overlapping ones are in flight; the rest wait.
	tst.Eventually(t, 10*time.Second, func() bool {
		h.rec.mu.Lock()
		defer h.rec.mu.Unlock()
		return len(h.rec.calls) >= 3
	}, "three runs in flight")
	waitPast(t, time.Now().Add(5*iv))
	mu.Lock()
	got := most
	mu.Unlock()
	if got != 3 {
		t.Fatalf("%d runs in flight at most, want 3 (the task's own and MaxOverlap 2)", got)
	}
	close(release)
	h.waitState("o", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	// Every fire time ran once: on the task, or on an overlapping run.
	ctx, cancel := rpc()
	defer cancel()
	list, err := h.node.Client.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "o", PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	fires := map[int64]int{}
	overlaps := 0
	for _, tk := range list.Tasks {
		if tk.Id != task.Id {
			if tk.Spec.Labels[taskservice.OverlapLabel] != task.Id {
				t.Fatalf("task %s of the identity is not labelled as an overlapping run of %s: %v", tk.Id, task.Id, tk.Spec.Labels)
			}
			overlaps++
			h.waitState("o", tk.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
		}
		for _, c := range h.rec.of(tk.Id) {
			fires[c.Fire.UnixNano()]++
		}
	}
	if overlaps == 0 {
		t.Fatalf("no overlapping run was started")
	}
	for k := 0; k < 6; k++ {
		at := start.Add(time.Duration(k) * iv)
		if n := fires[at.UnixNano()]; n != 1 {
			t.Fatalf("fire time %d (%v) ran %d times, want once (fires %v)", k, at, n, fires)
		}
	}
}

// TestOverlappingRunWithUnknownOutcomeRunsOnce: the Txn that starts an
// overlapping run is applied but its reply is lost (Ambiguous). The
// overlapping run it stored still runs, once, and no fire time runs twice.
func TestOverlappingRunWithUnknownOutcomeRunsOnce(t *testing.T) {
	e := tst.StartEtcd(t)
	in := etcdfault.New()
	rule := in.Add(etcdfault.Rule{Op: etcdfault.OpTxn, Times: 1, Action: etcdfault.Ambiguous(errors.New("reply lost")),
		Match: func(c etcdfault.Call) bool {
			tasks := map[string]bool{}
			for _, k := range c.Keys {
				if strings.HasPrefix(k, "/taskd/task/ov/") {
					tasks[k] = true
				}
			}
			return len(tasks) >= 2 // the task and its overlapping run: only a spawn writes two
		}})
	rec := &recorder{}
	release := make(chan struct{})
	rec.behave = func(ctx context.Context, r *taskservice.Run, n int) error {
		if n == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}
	n := faultNode(t, e, "n1", in, rec, nil, nil)
	iv := 100 * time.Millisecond
	start := time.Now().Add(iv)
	s := spec("ov", "rec", every(start, iv, 3))
	s.AllowOverlap = true
	task := scheduleOn(t, n, s)
	tst.Eventually(t, 10*time.Second, func() bool { return rule.Hits() == 1 }, "the spawn Txn to be hit")
	// Fire times 1 and 2 run as overlapping runs (one maybe after a
	// repair) while run 1 is held.
	tst.Eventually(t, 10*time.Second, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.calls) == 3
	}, "the two overlapping runs while the first is in flight")
	close(release)
	waitTaskState(t, n, "ov", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	waitPast(t, time.Now().Add(300*time.Millisecond))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	fires := map[int64]int{}
	for _, c := range rec.calls {
		fires[c.Fire.UnixNano()]++
	}
	for k := 0; k < 3; k++ {
		if got := fires[start.Add(time.Duration(k)*iv).UnixNano()]; got != 1 {
			t.Fatalf("fire time %d ran %d times, want once (%v)", k, got, fires)
		}
	}
}

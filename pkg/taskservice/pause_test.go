package taskservice_test

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// waitPast waits until the clock has passed t (the test then asserts what
// did not happen over a stretch of fire times).
func waitPast(t *testing.T, at time.Time) {
	t.Helper()
	tst.Eventually(t, time.Until(at)+10*time.Second, func() bool { return time.Now().After(at) }, "the clock to pass %v", at)
}

// TestPausedTaskRunsNothingAndResumesByItsMisfirePolicy: a paused periodic
// task keeps its trigger but starts no run; it shows PAUSED; on resume the
// fire times that came due meanwhile go through its misfire policy:
// FIRE_ONCE_NOW runs one of them at once, SKIP none (a MISFIRED event).
// So it is whether the pause was longer than the threshold (100ms) or not
// (60s): what came due while paused is caught up, not replayed.
func TestPausedTaskRunsNothingAndResumesByItsMisfirePolicy(t *testing.T) {
	for _, tc := range []struct {
		threshold time.Duration
		policy    taskdv1.MisfirePolicy
	}{
		{100 * time.Millisecond, taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW},
		{100 * time.Millisecond, taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP},
		{time.Minute, taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW},
		{time.Minute, taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP},
	} {
		policy := tc.policy
		t.Run(fmt.Sprintf("threshold %v/%v", tc.threshold, policy), func(t *testing.T) {
			h := newHarness(t, func(c *taskservice.Config) { c.MisfireThreshold = tc.threshold })
			iv := 50 * time.Millisecond
			s := spec("p", "rec", every(time.Now().Add(iv), iv, 0))
			s.Misfire = policy
			task := h.schedule(s)
			tst.Eventually(t, 10*time.Second, func() bool { return len(h.rec.of(task.Id)) >= 2 }, "two runs")

			ctx, cancel := rpc()
			defer cancel()
			p, err := h.node.Client.PauseTask(ctx, &taskdv1.PauseTaskRequest{Identity: "p", TaskId: task.Id})
			if err != nil {
				t.Fatalf("PauseTask: %v", err)
			}
			if !p.Task.Paused || len(p.Task.PausedBy) != 1 || p.Task.PausedBy[0] != "task" {
				t.Fatalf("paused task shows paused=%v by %v", p.Task.Paused, p.Task.PausedBy)
			}
			// A run in flight at the pause may still end; after it, nothing.
			got := h.waitState("p", task.Id, taskdv1.TaskState_TASK_STATE_PAUSED)
			if got.NextFireTime == nil {
				t.Fatalf("a paused task keeps its trigger: no next fire time")
			}
			before := len(h.rec.of(task.Id))
			pausedAt := time.Now()
			waitPast(t, pausedAt.Add(10*iv))
			if n := len(h.rec.of(task.Id)); n != before {
				t.Fatalf("%d runs while paused", n-before)
			}
			if _, err := h.node.Client.ResumeTask(ctx, &taskdv1.ResumeTaskRequest{Identity: "p", TaskId: task.Id}); err != nil {
				t.Fatalf("ResumeTask: %v", err)
			}
			tst.Eventually(t, 10*time.Second, func() bool { return len(h.rec.of(task.Id)) > before }, "a run after resume")
			first := h.rec.of(task.Id)[before]
			switch policy {
			case taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW:
				// The catch-up run serves a fire time from the pause.
				if !first.Fire.Before(pausedAt.Add(10 * iv)) {
					t.Fatalf("first run after resume serves %v, want a fire time missed while paused (paused at %v)", first.Fire, pausedAt)
				}
				if first.Start.Sub(first.Fire) < 100*time.Millisecond {
					t.Fatalf("catch-up run of %v started %v: not late", first.Fire, first.Start)
				}
			case taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP:
				if first.Fire.Before(pausedAt.Add(10 * iv)) {
					t.Fatalf("SKIP ran fire time %v missed while paused", first.Fire)
				}
			}
			if !h.ev.has(taskservice.EventMisfired, task.Id) {
				t.Fatalf("no MISFIRED event after the resume")
			}
			if got := h.get("p", task.Id); got.Paused || got.State == taskdv1.TaskState_TASK_STATE_PAUSED || got.Misfires == 0 {
				t.Fatalf("after resume: paused=%v state %v misfires %d", got.Paused, got.State, got.Misfires)
			}
		})
	}
}

// TestPauseSurvivesRestart: identity and kind pauses and a task pause hold
// across a restart of the only node, and ListPauses shows them.
func TestPauseSurvivesRestart(t *testing.T) {
	e := tst.StartEtcd(t)
	rec := &recorder{}
	cfg := fastConfig("n1", rec, nil)
	cfg.Handlers["other"] = rec
	n := tst.StartNode(t, e.Client(t), cfg)
	ctx, cancel := rpc()
	defer cancel()
	soon := time.Now().Add(time.Second)
	tA := scheduleOn(t, n, spec("a", "rec", once(soon)))
	tB := scheduleOn(t, n, spec("b", "rec", once(soon)))
	tC := scheduleOn(t, n, spec("c", "other", once(soon)))
	if _, err := n.Client.PauseTask(ctx, &taskdv1.PauseTaskRequest{Identity: "a", TaskId: tA.Id}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Client.PauseIdentity(ctx, &taskdv1.PauseIdentityRequest{Identity: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Client.PauseKind(ctx, &taskdv1.PauseKindRequest{Kind: "other"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	n = tst.StartNode(t, e.Client(t), cfg)
	waitPast(t, soon.Add(500*time.Millisecond))
	for _, c := range []struct {
		id, task, by string
	}{{"a", tA.Id, "task"}, {"b", tB.Id, "identity"}, {"c", tC.Id, "kind"}} {
		got := getTask(t, n, c.id, c.task)
		if got.State != taskdv1.TaskState_TASK_STATE_PAUSED || len(got.PausedBy) != 1 || got.PausedBy[0] != c.by {
			t.Fatalf("task of %s after restart: state %v paused by %v, want PAUSED by %s", c.id, got.State, got.PausedBy, c.by)
		}
		if len(rec.of(c.task)) != 0 {
			t.Fatalf("paused task of %s ran", c.id)
		}
	}
	lp, err := n.Client.ListPauses(ctx, &taskdv1.ListPausesRequest{})
	if err != nil || len(lp.Pauses) != 2 || lp.Pauses[0].Identity != "b" || lp.Pauses[1].Kind != "other" {
		t.Fatalf("ListPauses = %v, %v; want identity b then kind other", lp, err)
	}
	if _, err := n.Client.ResumeKind(ctx, &taskdv1.ResumeKindRequest{Kind: "other"}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Client.ResumeIdentity(ctx, &taskdv1.ResumeIdentityRequest{Identity: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Client.ResumeTask(ctx, &taskdv1.ResumeTaskRequest{Identity: "a", TaskId: tA.Id}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ id, task string }{{"a", tA.Id}, {"b", tB.Id}, {"c", tC.Id}} {
		waitTaskState(t, n, c.id, c.task, taskdv1.TaskState_TASK_STATE_COMPLETED)
	}
}

// TestIdentityPauseHoldsBeforeTheWatchBringsIt: a node whose watch never
// delivers the pause (its events dropped) still starts no run of a paused
// identity: the start Txn compares the pause key's absence, fails, and the
// node learns the pause from its Else. Without the compare the handler
// would run.
func TestIdentityPauseHoldsBeforeTheWatchBringsIt(t *testing.T) {
	e := tst.StartEtcd(t)
	in := etcdfault.New()
	dropped := in.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: "/taskd/pause/", Action: etcdfault.DropEvents()})
	rec := &recorder{}
	n := faultNode(t, e, "n1", in, rec, nil, nil)
	task := scheduleOn(t, n, spec("victim", "rec", after(time.Hour)))

	// Another client pauses the identity: n1's watch drops the event.
	raw := e.Client(t)
	b, _ := proto.Marshal(&taskdv1.Pause{Identity: "victim", Since: timestamppb.Now()})
	ctx, cancel := rpc()
	defer cancel()
	if _, err := raw.Put(ctx, keyspace.New("/taskd/").PauseIdentity("victim"), string(b)); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return dropped.Seen() > 0 }, "the pause event to be dropped")
	if got := getTask(t, n, "victim", task.Id); got.Paused {
		t.Fatalf("test set-up: n1 already knows the pause")
	}
	// Make the task due now.
	if _, err := n.Client.RunTaskNow(ctx, &taskdv1.RunTaskNowRequest{Identity: "victim", TaskId: task.Id}); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return getTask(t, n, "victim", task.Id).Paused }, "n1 to learn the pause from a refused start")
	if calls := rec.of(task.Id); len(calls) != 0 {
		t.Fatalf("a run of a paused identity started: %+v", calls)
	}
	// Resumed through n1 itself (its watch still drops pause events): the
	// manual run goes ahead.
	if _, err := n.Client.ResumeIdentity(ctx, &taskdv1.ResumeIdentityRequest{Identity: "victim"}); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return len(rec.of(task.Id)) == 1 }, "the manual run after the resume")
	if resp, err := raw.Get(ctx, "/taskd/pause/", clientv3.WithPrefix()); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("pause keys left after resume: %v %v", resp, err)
	}
}

package taskservice_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestSeveralTriggersEachRunKnowsItsTrigger: a task with a once, a
// periodic and a cron trigger fires by all three, earliest first; every
// run in its history names the trigger (index and name) that fired it (the
// unnamed one by the name the server gave it, "#<index>"), and a manual run
// names none (-1).
func TestSeveralTriggersEachRunKnowsItsTrigger(t *testing.T) {
	h := newHarness(t, nil)
	now := time.Now()
	onceT := once(now.Add(150 * time.Millisecond))
	onceT.Name = "kick-off"
	per := every(now.Add(100*time.Millisecond), 300*time.Millisecond, 2)
	per.Name = "tick"
	cronT := cronTrigger("* * * * * ?", "Asia/Kathmandu") // every second, in a +05:45 zone
	task := h.schedule(spec("multi", "rec", onceT, per, cronT))
	tst.Eventually(t, 10*time.Second, func() bool { return len(h.rec.of(task.Id)) >= 5 }, "runs by every trigger")
	ctx, cancel := rpc()
	defer cancel()
	if _, err := h.node.Client.RunTaskNow(ctx, &taskdv1.RunTaskNowRequest{Identity: "multi", TaskId: task.Id}); err != nil {
		t.Fatal(err)
	}
	tst.Eventually(t, 10*time.Second, func() bool {
		for _, r := range h.runs("multi", task.Id) {
			if r.Manual {
				return true
			}
		}
		return false
	}, "the manual run in history")
	by := map[int32]int{}
	for _, r := range h.runs("multi", task.Id) {
		switch {
		case r.Manual:
			if r.Trigger != -1 || r.TriggerName != "" {
				t.Fatalf("manual run names trigger %d %q", r.Trigger, r.TriggerName)
			}
		case r.Trigger == 0 && r.TriggerName == "kick-off", r.Trigger == 1 && r.TriggerName == "tick", r.Trigger == 2 && r.TriggerName == "#2":
			by[r.Trigger]++
		default:
			t.Fatalf("run %d names trigger %d %q", r.RunNumber, r.Trigger, r.TriggerName)
		}
		if r.Trigger == 2 && r.FireTime.AsTime().Nanosecond() != 0 {
			t.Fatalf("cron run for %v: not on a whole second", r.FireTime.AsTime())
		}
	}
	if by[0] != 1 || by[1] != 2 || by[2] < 1 {
		t.Fatalf("runs by trigger %v, want once 1, periodic 2, cron at least 1", by)
	}
	got := h.get("multi", task.Id)
	if len(got.NextFireTimes) == 0 || got.NextFireTime == nil {
		t.Fatalf("a task with a cron trigger shows no next fire times")
	}
}

// TestJitterDelaysEachFireTimeAsPreviewed: a periodic trigger with a
// jitter runs each fire time at its delayed instant: STARTED's Ready is
// the instant PreviewTaskTriggers gives for the task, from 0 up to the
// jitter after the fire time, no start comes before it, and the run
// carries the undelayed fire time. Lateness counts from the delayed
// instant: with a misfire threshold far below the jitter and the SKIP
// policy, no fire time is skipped.
func TestJitterDelaysEachFireTimeAsPreviewed(t *testing.T) {
	h := newHarness(t, func(c *taskservice.Config) { c.MisfireThreshold = 50 * time.Millisecond })
	const jitter = 1500 * time.Millisecond
	start := time.Now().Add(300 * time.Millisecond).Truncate(time.Millisecond)
	tr := every(start, 2*time.Second, 3)
	tr.Jitter = durationpb.New(jitter)
	s := spec("jit", "rec", tr)
	s.Misfire = taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP
	task := h.schedule(s)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	due, err := h.node.PreviewTaskTriggers(ctx, task.Id, task.Spec.Triggers, nil, start, 3)
	if err != nil || len(due) != 3 {
		t.Fatalf("PreviewTaskTriggers: %v, %d fire times", err, len(due))
	}
	plain, err := h.node.PreviewTriggers(ctx, task.Spec.Triggers, nil, start, 3)
	if err != nil || len(plain) != 3 {
		t.Fatalf("PreviewTriggers: %v, %d fire times", err, len(plain))
	}
	tst.Eventually(t, 20*time.Second, func() bool { return len(h.rec.of(task.Id)) >= 3 }, "three runs")

	var started []taskservice.Event
	h.ev.mu.Lock()
	for _, ev := range h.ev.evs {
		if ev.TaskID == task.Id && ev.Type == taskservice.EventStarted {
			started = append(started, ev)
		}
		if ev.TaskID == task.Id && ev.Type == taskservice.EventMisfired {
			t.Errorf("MISFIRED %d fire times: a jitter's delay counted as lateness", ev.Count)
		}
	}
	h.ev.mu.Unlock()
	if len(started) != 3 {
		t.Fatalf("%d STARTED events, want 3", len(started))
	}
	delayed := false
	for k, ev := range started {
		fire := start.Add(time.Duration(k) * 2 * time.Second)
		if !ev.FireTime.Equal(fire) || !plain[k].At.AsTime().Equal(fire) {
			t.Errorf("run %d: fire time %s (preview without the task: %s), want the undelayed %s", k+1, ev.FireTime, plain[k].At.AsTime(), fire)
		}
		want := due[k].At.AsTime()
		if !ev.Ready.Equal(want) {
			t.Errorf("run %d: ready %s, want the previewed instant %s", k+1, ev.Ready, want)
		}
		if d := want.Sub(fire); d < 0 || d >= jitter {
			t.Errorf("run %d: delayed %s, want from 0 up to %s", k+1, d, jitter)
		}
		if ev.Time.Before(want) {
			t.Errorf("run %d started at %s, before its delayed instant %s", k+1, ev.Time, want)
		}
		delayed = delayed || want.After(fire)
	}
	if !delayed {
		t.Errorf("no fire time delayed: the jitter was not applied")
	}
	if _, err := h.node.PreviewTaskTriggers(ctx, "nope", task.Spec.Triggers, nil, start, 1); err == nil {
		t.Errorf("PreviewTaskTriggers accepted a task id that is none")
	}
}

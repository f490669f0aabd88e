package taskservice_test

import (
	"testing"
	"time"

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

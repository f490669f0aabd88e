package main

import (
	"context"
	"strings"
	"testing"
	"time"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// testTriggersAndDelete: trigger add and trigger remove change the triggers
// they name and print the task; runs marks the runs of a removed trigger;
// delete removes a finished task and refuses a live one.
func testTriggersAndDelete(t *testing.T, c *cluster) {
	id := c.scheduled(t, "--identity", "trg", "--kind", "echo", "--scope", "identity", "--every", "100ms")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tst.Eventually(t, 10*time.Second, func() bool {
		resp, err := c.node.Client.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: "trg", TaskId: id})
		return err == nil && len(resp.GetRuns()) >= 1
	}, "a run of #0 in history")

	d := detail(c.ok(t, "trigger", "add", "--identity", "trg", id, "--cron", "0 0 3 * * ?", "--name", "nightly"))
	if tr := d["Trigger"]; len(tr) != 2 || !strings.HasPrefix(tr[0], "#0: every 100ms") || !strings.HasPrefix(tr[1], `nightly: cron "0 0 3 * * ?" in UTC`) {
		t.Fatalf("Trigger lines after trigger add %q, want #0 and nightly", tr)
	}
	d = detail(c.ok(t, "trigger", "remove", "--identity", "trg", id, "#0"))
	if tr := d["Trigger"]; len(tr) != 1 || !strings.HasPrefix(tr[0], "nightly: cron") {
		t.Fatalf("Trigger lines after trigger remove %q, want nightly alone", tr)
	}
	if runs := c.ok(t, "runs", "--identity", "trg", id); !strings.Contains(runs, "#0 (removed)") {
		t.Errorf("runs of the removed trigger are not marked:\n%s", runs)
	}
	if code, _, errOut := c.ctl(t, "trigger", "add", "--identity", "trg", id, "--every", "1h", "--cron", "0 0 4 * * ?", "--name", "two"); code != exitUsage || !strings.Contains(errOut, "--name") {
		t.Errorf("--name for two triggers: exit %d, stderr %q; want a usage error naming --name", code, errOut)
	}
	c.fails(t, []string{"trigger", "remove", "--identity", "trg", id, "nope"}, "InvalidArgument: remove_triggers[0]")
	c.fails(t, []string{"trigger", "remove", "--identity", "trg", id, "nightly"}, "FailedPrecondition", "cancel it")

	c.fails(t, []string{"delete", "--identity", "trg", id}, "taskctl: delete: FailedPrecondition: ", "cancel it first")
	c.ok(t, "cancel", "--identity", "trg", id)
	if out := c.ok(t, "delete", "--identity", "trg", id); out != "task "+id+" deleted\n" {
		t.Errorf("delete printed %q", out)
	}
	if _, err := c.node.Client.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: "trg", TaskId: id}); err == nil {
		t.Fatalf("the task is still there after delete")
	}
	c.fails(t, []string{"delete", "--identity", "trg", id}, "NotFound")
}

package taskservice_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestNoTriggerMeansOnceNow schedules tasks without a trigger through each
// way in (ScheduleTask, ScheduleTasks, the library's Schedule): each is
// stored with one once trigger at its creation time and runs once, for that
// fire time. An update without triggers is refused (it would replace them).
func TestNoTriggerMeansOnceNow(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := rpc()
	defer cancel()
	var tasks []*taskdv1.Task
	tasks = append(tasks, h.schedule(spec("d", "rec")))
	batch, err := h.node.Client.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: []*taskdv1.TaskSpec{spec("d", "rec"), spec("d", "rec", now())}})
	if err != nil {
		t.Fatalf("ScheduleTasks without triggers: %v", err)
	}
	tasks = append(tasks, batch.Tasks...)
	lib, err := h.node.Node.Schedule(ctx, []*taskdv1.TaskSpec{spec("d", "rec")})
	if err != nil {
		t.Fatalf("library Schedule without triggers: %v", err)
	}
	tasks = append(tasks, lib[0].Task)
	for _, task := range tasks {
		trs := task.GetSpec().GetTriggers()
		if len(trs) != 1 || trs[0].GetOnce() == nil || !trs[0].GetOnce().GetAt().AsTime().Equal(task.CreatedAt.AsTime()) {
			t.Fatalf("task %s stored with triggers %v, want one once trigger at its creation %v", task.Id, trs, task.CreatedAt.AsTime())
		}
		done := h.waitState("d", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
		runs := h.runs("d", task.Id)
		if done.RunCount != 1 || len(runs) != 1 || !runs[0].FireTime.AsTime().Equal(task.CreatedAt.AsTime()) || runs[0].Trigger != 0 {
			t.Fatalf("task %s: run count %d, runs %v; want one run of trigger 0 for its creation time", task.Id, done.RunCount, runs)
		}
	}
	pending := h.schedule(spec("d", "rec", after(time.Hour)))
	_, err = update(ctx, h.node, "d", pending, func(s *taskdv1.TaskSpec) { s.Triggers = nil }, 0)
	if status.Code(err) != codes.InvalidArgument || !contains(err.Error(), "spec.triggers") {
		t.Fatalf("update without triggers: %v, want INVALID_ARGUMENT naming spec.triggers", err)
	}
}

// TestEndBeforeTheResolvedStartIsRefused: a periodic trigger without a
// start begins one interval from now and a cron trigger without one now;
// an end before that start would make a task that never runs, so it is
// refused naming the end, by ScheduleTask, ScheduleTasks, UpdateTask and
// PreviewTriggers alike. An end after the resolved start is taken.
func TestEndBeforeTheResolvedStartIsRefused(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := rpc()
	defer cancel()
	soon := timestamppb.New(time.Now().Add(time.Minute))
	hourly := &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Hour), End: soon}}}
	pastCron := &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 * * * ?",
		End: timestamppb.New(time.Now().Add(-time.Minute))}}}
	refused := func(what string, err error, field string) {
		t.Helper()
		if status.Code(err) != codes.InvalidArgument || !contains(err.Error(), field+":") {
			t.Fatalf("%s: %v, want INVALID_ARGUMENT naming %s", what, err, field)
		}
	}
	_, err := h.node.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec("w", "rec", hourly)})
	refused("every 1h until in a minute", err, "task.triggers[0].periodic.end")
	_, err = h.node.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec("w", "rec", now(), pastCron)})
	refused("cron until a minute ago", err, "task.triggers[1].cron.end")
	_, err = h.node.Client.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: []*taskdv1.TaskSpec{spec("w", "rec"), spec("w", "rec", hourly)}})
	refused("a batch", err, "tasks[1].triggers[0].periodic.end")
	_, err = h.node.Client.PreviewTriggers(ctx, &taskdv1.PreviewTriggersRequest{Triggers: []*taskdv1.Trigger{hourly}})
	refused("a preview", err, "triggers[0].periodic.end")

	task := h.schedule(spec("w", "rec", after(time.Hour)))
	_, err = update(ctx, h.node, "w", task, func(s *taskdv1.TaskSpec) { s.Triggers = []*taskdv1.Trigger{hourly} }, 0)
	refused("an update", err, "spec.triggers[0].periodic.end")

	// An end after the resolved start is fine.
	ok := &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Second), End: soon}}}
	if _, err := h.node.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec("w", "rec", ok)}); err != nil {
		t.Fatalf("every 1s until in a minute: %v", err)
	}
}

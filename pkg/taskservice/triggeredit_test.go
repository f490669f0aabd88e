package taskservice_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func named(name string, t *taskdv1.Trigger) *taskdv1.Trigger {
	t.Name = name
	return t
}

func triggerNamesOf(task *taskdv1.Task) []string {
	var out []string
	for _, t := range task.GetSpec().GetTriggers() {
		out = append(out, t.GetName())
	}
	return out
}

func editTriggers(n *tst.Node, id, taskID string, add []*taskdv1.Trigger, remove []string, rev int64) (*taskdv1.Task, error) {
	ctx, cancel := rpc()
	defer cancel()
	resp, err := n.Client.UpdateTask(ctx, &taskdv1.UpdateTaskRequest{Identity: id, TaskId: taskID,
		AddTriggers: add, RemoveTriggers: remove, Revision: rev})
	return resp.GetTask(), err
}

// runsBy counts a task's runs in history by trigger name.
func runsBy(runs []*taskdv1.Run, name string) (n int, removed bool) {
	for _, r := range runs {
		if r.TriggerName == name {
			n++
			removed = r.TriggerRemoved
		}
	}
	return n, removed
}

// TestTriggerNamesSurviveAnUpdate: the server names every unnamed trigger
// "#<n>", n counting the task's triggers from 0 and never reused; an
// update keeps a trigger's name (and progress) when it gives the same rule
// again, gives a new trigger the next name, and the history of a trigger
// the update dropped names it and says it is removed, instead of naming by
// index a trigger that is now another one. Events name the trigger too. A
// name of the server's form is refused for a trigger the task does not
// have.
func TestTriggerNamesSurviveAnUpdate(t *testing.T) {
	h := newHarness(t, nil)
	iv := 40 * time.Millisecond
	later := once(time.Now().Add(time.Hour))
	task := h.schedule(spec("names", "rec", every(time.Now().Add(iv), iv, 0), later))
	if got := fmt.Sprint(triggerNamesOf(task)); got != "[#0 #1]" {
		t.Fatalf("stored trigger names %s, want [#0 #1]", got)
	}
	tst.Eventually(t, 10*time.Second, func() bool { n, _ := runsBy(h.runs("names", task.Id), "#0"); return n >= 2 }, "two runs of #0")

	w := watch(t, h.node, &taskdv1.WatchEventsRequest{Identity: "names", TaskId: task.Id})
	// The update as a client that does not track names writes it: the once
	// trigger as it was, the periodic one replaced by another.
	ctx, cancel := rpc()
	defer cancel()
	up, err := update(ctx, h.node, "names", task, func(s *taskdv1.TaskSpec) {
		s.Triggers = []*taskdv1.Trigger{once(later.GetOnce().At.AsTime()), every(time.Now().Add(iv), iv, 0)}
	}, 0)
	if err != nil {
		t.Fatalf("UpdateTask: %v", err)
	}
	if got := fmt.Sprint(triggerNamesOf(up)); got != "[#1 #2]" {
		t.Fatalf("trigger names after the update %s, want [#1 #2] (the once trigger kept, the new one named after every earlier one)", got)
	}
	tst.Eventually(t, 10*time.Second, func() bool { n, _ := runsBy(h.runs("names", task.Id), "#2"); return n >= 2 }, "two runs of #2")
	runs := h.runs("names", task.Id)
	for _, r := range runs {
		switch r.TriggerName {
		case "#0":
			if !r.TriggerRemoved || r.Trigger != 0 {
				t.Fatalf("run %d of the replaced trigger: index %d, removed %v; want index 0 (as fired), removed", r.RunNumber, r.Trigger, r.TriggerRemoved)
			}
		case "#2":
			if r.TriggerRemoved || r.Trigger != 1 {
				t.Fatalf("run %d of the new trigger: index %d, removed %v; want index 1, not removed", r.RunNumber, r.Trigger, r.TriggerRemoved)
			}
		default:
			t.Fatalf("run %d names trigger %d %q", r.RunNumber, r.Trigger, r.TriggerName)
		}
	}
	w.waitFor(t, "a STARTED event naming #2", func(evs []*taskdv1.Event) bool {
		for _, e := range evs {
			if e.Type == taskdv1.EventType_EVENT_TYPE_STARTED && e.TriggerName == "#2" && e.Trigger == 1 {
				return true
			}
		}
		return false
	})

	// Names of the server's form: only for a trigger the task has.
	_, err = update(ctx, h.node, "names", up, func(s *taskdv1.TaskSpec) { s.Triggers[0].Name = "#7" }, 0)
	if status.Code(err) != codes.InvalidArgument || !contains(err.Error(), "spec.triggers[0].name") {
		t.Fatalf("update with a made-up #7: %v, want INVALID_ARGUMENT naming spec.triggers[0].name", err)
	}
	_, err = h.node.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec("names", "rec", named("#0", now()))})
	if status.Code(err) != codes.InvalidArgument || !contains(err.Error(), "task.triggers[0].name") {
		t.Fatalf("schedule with a trigger named #0: %v, want INVALID_ARGUMENT naming task.triggers[0].name", err)
	}
	// Given back under its name with another rule, a trigger keeps the name.
	again, err := update(ctx, h.node, "names", h.get("names", task.Id), func(s *taskdv1.TaskSpec) {
		s.Triggers[0] = named("#1", once(time.Now().Add(2*time.Hour)))
	}, 0)
	if err != nil || fmt.Sprint(triggerNamesOf(again)) != "[#1 #2]" {
		t.Fatalf("update of #1 under its name: %v, names %v; want [#1 #2]", err, triggerNamesOf(again))
	}
}

// TestAddAndRemoveTriggersKeepsTheOthers: UpdateTask's add_triggers and
// remove_triggers change only the triggers they name: a once trigger that
// already fired is not fired again, a removed periodic trigger fires no
// more (its runs stay in history, marked removed), an added one starts as
// on a new task and is named by the server.
func TestAddAndRemoveTriggersKeepsTheOthers(t *testing.T) {
	h := newHarness(t, nil)
	iv := 40 * time.Millisecond
	task := h.schedule(spec("edit", "rec", named("first", now()), named("tick", every(time.Now().Add(iv), iv, 0))))
	tst.Eventually(t, 10*time.Second, func() bool {
		runs := h.runs("edit", task.Id)
		first, _ := runsBy(runs, "first")
		ticks, _ := runsBy(runs, "tick")
		return first == 1 && ticks >= 2
	}, "the once trigger's run and two ticks")

	up, err := editTriggers(h.node, "edit", task.Id, []*taskdv1.Trigger{every(time.Time{}, iv, 2)}, []string{"tick"}, 0)
	if err != nil {
		t.Fatalf("add and remove: %v", err)
	}
	edited := time.Now()
	if got := fmt.Sprint(triggerNamesOf(up)); got != "[first #2]" {
		t.Fatalf("triggers after the edit %s, want [first #2]", got)
	}
	h.waitState("edit", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	runs := h.runs("edit", task.Id)
	if n, removed := runsBy(runs, "first"); n != 1 || removed {
		t.Fatalf("the kept once trigger ran %d times (removed %v), want once: the edit reset its progress", n, removed)
	}
	if n, _ := runsBy(runs, "#2"); n != 2 {
		t.Fatalf("the added trigger ran %d times, want 2", n)
	}
	if _, removed := runsBy(runs, "tick"); !removed {
		t.Fatalf("runs of the removed trigger are not marked removed")
	}
	for _, r := range runs {
		if r.TriggerName == "tick" && r.FireTime.AsTime().After(edited) {
			t.Fatalf("the removed trigger fired at %v, after the edit at %v", r.FireTime.AsTime(), edited)
		}
	}

	// Refusals, on a live task; none changes it.
	live := h.schedule(spec("edit", "rec", named("solo", every(time.Now().Add(time.Hour), time.Hour, 0))))
	var sixteen []*taskdv1.Trigger
	for range 16 {
		sixteen = append(sixteen, once(time.Now().Add(time.Hour)))
	}
	for _, tc := range []struct {
		name   string
		add    []*taskdv1.Trigger
		remove []string
		rev    int64
		code   codes.Code
		field  string
	}{
		{"unknown name", nil, []string{"nope"}, 0, codes.InvalidArgument, "remove_triggers[0]"},
		{"the last trigger", nil, []string{"solo"}, 0, codes.FailedPrecondition, "cancel it"},
		{"a name twice", nil, []string{"solo", "solo"}, 0, codes.InvalidArgument, "remove_triggers[1]"},
		{"over the limit", sixteen, nil, 0, codes.InvalidArgument, "add_triggers"},
		{"a name taken", []*taskdv1.Trigger{named("solo", now())}, nil, 0, codes.InvalidArgument, "add_triggers[0].name"},
		{"a server name", []*taskdv1.Trigger{named("#5", now())}, nil, 0, codes.InvalidArgument, "add_triggers[0].name"},
		{"a bad trigger", []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "x"}}}}, nil, 0, codes.InvalidArgument, "add_triggers[0].cron.expression"},
		{"a stale revision", []*taskdv1.Trigger{now()}, nil, live.Revision - 1, codes.Aborted, "revision"},
	} {
		_, err := editTriggers(h.node, "edit", live.Id, tc.add, tc.remove, tc.rev)
		if status.Code(err) != tc.code || !contains(err.Error(), tc.field) {
			t.Errorf("%s: %v, want %v naming %s", tc.name, err, tc.code, tc.field)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = h.node.Client.UpdateTask(ctx, &taskdv1.UpdateTaskRequest{Identity: "edit", TaskId: live.Id, Spec: live.Spec, RemoveTriggers: []string{"solo"}})
	if status.Code(err) != codes.InvalidArgument || !contains(err.Error(), "spec") {
		t.Errorf("spec with remove_triggers: %v, want INVALID_ARGUMENT naming spec", err)
	}
	if got := h.get("edit", live.Id); got.Revision != live.Revision {
		t.Fatalf("a refused edit changed the task (revision %d, was %d)", got.Revision, live.Revision)
	}
	// Replacing the only trigger in one update is allowed.
	up, err = editTriggers(h.node, "edit", live.Id, []*taskdv1.Trigger{once(time.Now().Add(time.Hour))}, []string{"solo"}, live.Revision)
	if err != nil || fmt.Sprint(triggerNamesOf(up)) != "[#1]" {
		t.Fatalf("replace the only trigger: %v, names %v; want [#1]", err, triggerNamesOf(up))
	}
}

// TestEditTriggersOfEveryNodeTaskKeepsEachNodesProgress: on an EVERY_NODE
// task, removing a trigger moves the ones after it; each node's progress
// follows its trigger by name, so a once trigger that ran on every node
// does not run again (by position it would take the removed periodic
// trigger's progress and fire at its next time).
func TestEditTriggersOfEveryNodeTaskKeepsEachNodesProgress(t *testing.T) {
	c := newCluster(t, []string{"a", "b"}, nil)
	iv := 50 * time.Millisecond
	task := c.schedule("a", everyNode(spec("en", "rec", named("tick", every(time.Now().Add(iv), iv, 0)), named("first", now()))))
	h := &harness{t: t, node: c.nodes["a"]}
	perNode := func(runs []*taskdv1.Run, name string) map[string]int {
		out := map[string]int{}
		for _, r := range runs {
			if r.TriggerName == name {
				out[r.Node]++
			}
		}
		return out
	}
	tst.Eventually(t, 10*time.Second, func() bool {
		runs := h.runs("en", task.Id)
		f, k := perNode(runs, "first"), perNode(runs, "tick")
		return f["a"] == 1 && f["b"] == 1 && k["a"] >= 1 && k["b"] >= 1
	}, "the once trigger and a tick on each node")
	if _, err := editTriggers(c.nodes["b"], "en", task.Id, nil, []string{"tick"}, 0); err != nil {
		t.Fatalf("remove tick: %v", err)
	}
	edited := time.Now()
	waitPast(t, edited.Add(10*iv))
	runs := h.runs("en", task.Id)
	if f := perNode(runs, "first"); f["a"] != 1 || f["b"] != 1 {
		t.Fatalf("runs of the kept once trigger per node %v, want 1 each: a node's progress went to another trigger", f)
	}
	for _, r := range runs {
		if r.TriggerName == "tick" && r.FireTime.AsTime().After(edited) {
			t.Fatalf("the removed trigger fired on %s at %v, after the edit", r.Node, r.FireTime.AsTime())
		}
	}
}

package taskspec

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file tests the checks without a node: what the node knows comes in
// through a NodeView, and each refusal is the error the API answers with,
// word for word.

var testNode = NodeView{
	MaxPayload:     16,
	KindServed:     func(kind string) bool { return kind == "served" },
	HandlesKind:    func(kind string) bool { return kind == "local" },
	CalendarStored: func(name string) bool { return name == "holidays" },
}

func onceNow() *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}
}

func validSpec() *taskdv1.TaskSpec {
	return &taskdv1.TaskSpec{Identity: "id", Kind: "served", Scope: taskdv1.Scope_SCOPE_IDENTITY, Triggers: []*taskdv1.Trigger{onceNow()}}
}

// TestCheckTaskNamesTheField: each wrong field of a spec is refused with
// an *InvalidArgumentError naming it under the spec's path.
func TestCheckTaskNamesTheField(t *testing.T) {
	hourly := &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Hour)}}}
	for _, c := range []struct {
		change func(*taskdv1.TaskSpec)
		want   string
	}{
		{func(s *taskdv1.TaskSpec) { s.Scope = 0 }, "task.scope: is required: SCOPE_IDENTITY (once in the cluster) or SCOPE_EVERY_NODE (on every node)"},
		{func(s *taskdv1.TaskSpec) { s.Kind = "" }, "task.kind: must not be empty"},
		{func(s *taskdv1.TaskSpec) { s.Payload = make([]byte, 17) }, "task.payload: is 17 bytes, the limit is 16"},
		{func(s *taskdv1.TaskSpec) { s.Triggers = nil }, "task.triggers: needs at least one trigger: an update replaces the task's triggers (send its own to keep them)"},
		{func(s *taskdv1.TaskSpec) { s.Triggers = []*taskdv1.Trigger{{}} }, "task.triggers[0]: names no trigger kind (once, periodic, cron or on_startup)"},
		{func(s *taskdv1.TaskSpec) { s.MaxAttempts = MaxAttemptsLimit + 1 }, "task.max_attempts: is 1001, must be 0 (default 25) to 1000"},
		{func(s *taskdv1.TaskSpec) { s.Timeout = durationpb.New(8 * 24 * time.Hour) }, "task.timeout: is 192h0m0s, must be between 0s and 168h0m0s"},
		{func(s *taskdv1.TaskSpec) { s.Calendars = []string{"holidays", "holidays"} }, `task.calendars[1]: calendar "holidays" is listed twice`},
		{func(s *taskdv1.TaskSpec) { s.Calendars = []string{"none"} }, `task.calendars[0]: no calendar "none" (create it first: CreateCalendar)`},
		{func(s *taskdv1.TaskSpec) { s.Kind = "other" }, `task.kind: no node of the cluster handles kind "other"`},
		{func(s *taskdv1.TaskSpec) { s.NonDurable = true }, `task.kind: this node has no handler for kind "served" (a non-durable task runs on the node that accepts it)`},
		{func(s *taskdv1.TaskSpec) { s.AllowOverlap, s.NonDurable, s.Kind = true, true, "local" }, "task.allow_overlap: is for durable tasks of scope IDENTITY (an overlapping run is stored as a task of its identity)"},
		{func(s *taskdv1.TaskSpec) {
			hourly.GetPeriodic().Start, hourly.GetPeriodic().End = timestamppb.New(MinInstant.Add(time.Hour)), timestamppb.New(MinInstant)
			s.Triggers = []*taskdv1.Trigger{hourly}
		}, "task.triggers[0].periodic.end: is before periodic.start"},
	} {
		s := validSpec()
		c.change(s)
		err := CheckTask("task", s, testNode)
		var ia *InvalidArgumentError
		if !errors.As(err, &ia) || err.Error() != c.want {
			t.Errorf("CheckTask: %v, want the *InvalidArgumentError %q", err, c.want)
		}
	}
	if err := CheckTask("task", validSpec(), testNode); err != nil {
		t.Fatalf("CheckTask of a valid spec: %v", err)
	}
}

// TestSpecErrorNamesTheRepeatedTrigger: a trigger name given twice is
// refused naming both triggers, and a SpecError names both under the path
// its request holds the spec at.
func TestSpecErrorNamesTheRepeatedTrigger(t *testing.T) {
	s := validSpec()
	a, b := onceNow(), onceNow()
	a.Name, b.Name = "x", "x"
	s.Triggers = []*taskdv1.Trigger{a, b}
	err := ErrorAt(2, CheckTask("", s, testNode))
	var se *SpecError
	if !errors.As(err, &se) || se.Index != 2 || se.Field != "triggers[1].name" {
		t.Fatalf("ErrorAt of a repeated name: %#v, want a SpecError of spec 2 naming triggers[1].name", err)
	}
	if want := `tasks[2].triggers[1].name: "x" is also the name of tasks[2].triggers[0]`; err.Error() != want {
		t.Fatalf("Error: %q, want %q", err.Error(), want)
	}
	if got, want := se.In("task").Error(), `task.triggers[1].name: "x" is also the name of task.triggers[0]`; got != want {
		t.Fatalf("In(task): %q, want %q", got, want)
	}
	plain := errors.New("not about a field")
	if ErrorAt(0, plain) != plain {
		t.Fatal("ErrorAt changed an error that names no field")
	}
}

// TestCheckRequests: a batch, an update's unchangeable fields, a trigger
// edit and a preview are each refused naming their field.
func TestCheckRequests(t *testing.T) {
	if err := CheckBatch(MaxBatch + 1); err == nil || err.Error() != "tasks: has 101 tasks, the limit is 100" {
		t.Errorf("CheckBatch(101): %v", err)
	}
	if err := CheckBatch(0); err == nil || err.Error() != "tasks: needs at least one task" {
		t.Errorf("CheckBatch(0): %v", err)
	}
	next := validSpec()
	next.Kind = "other"
	if err := CheckUnchangeable("spec", validSpec(), next); err == nil || err.Error() != "spec.kind: cannot change (it is served, the update has other); schedule a new task instead" {
		t.Errorf("CheckUnchangeable of another kind: %v", err)
	}
	if err := CheckTriggerEdit(nil, []string{"a", "a"}); err == nil || err.Error() != `remove_triggers[1]: "a" is also remove_triggers[0]` {
		t.Errorf("CheckTriggerEdit removing a name twice: %v", err)
	}
	if err := CheckTriggerEdit(nil, []string{""}); err == nil || err.Error() != "remove_triggers[0]: is empty: give the name of a trigger of the task (GetTask shows them)" {
		t.Errorf("CheckTriggerEdit removing no name: %v", err)
	}
	stored := func(string) bool { return true }
	if n, err := CheckPreview([]*taskdv1.Trigger{onceNow()}, nil, 0, stored); err != nil || n != DefaultPreviewCount {
		t.Errorf("CheckPreview of count 0: %d, %v; want %d", n, err, DefaultPreviewCount)
	}
	if _, err := CheckPreview([]*taskdv1.Trigger{onceNow()}, nil, MaxPreviewCount+1, stored); err == nil || err.Error() != "count: is 1001, must be 1-1000 (0 means 10)" {
		t.Errorf("CheckPreview of count 1001: %v", err)
	}
	if _, err := CheckPreview(nil, nil, 1, stored); err == nil || err.Error() != "triggers: needs at least one trigger" {
		t.Errorf("CheckPreview without triggers: %v", err)
	}
}

// TestResolveTriggers: a delay becomes a time and a periodic trigger
// without a start starts one interval from now; an end before that start
// is refused naming the end.
func TestResolveTriggers(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &taskdv1.TaskSpec{Triggers: []*taskdv1.Trigger{
		{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{Delay: durationpb.New(time.Minute)}}},
		{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Hour)}}},
	}}
	if err := ResolveTriggers("triggers", s, now); err != nil {
		t.Fatal(err)
	}
	if at := s.Triggers[0].GetOnce(); !at.GetAt().AsTime().Equal(now.Add(time.Minute)) || at.Delay != nil {
		t.Fatalf("once after a minute resolved to %v", at)
	}
	if start := s.Triggers[1].GetPeriodic().GetStart().AsTime(); !start.Equal(now.Add(time.Hour)) {
		t.Fatalf("hourly without a start starts at %v, want %v", start, now.Add(time.Hour))
	}
	ends := &taskdv1.TaskSpec{Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
		Interval: durationpb.New(time.Hour), End: timestamppb.New(now.Add(time.Minute))}}}}}
	err := ResolveTriggers("spec.triggers", ends, now)
	want := "spec.triggers[0].periodic.end: is 2030-01-01T00:01:00Z, before the first fire time, one interval (1h0m0s) after now (no periodic.start is set) 2030-01-01T01:00:00Z: the trigger would never fire"
	if err == nil || err.Error() != want {
		t.Fatalf("an end before the resolved start: %v, want %q", err, want)
	}
	specs := []*taskdv1.TaskSpec{{}, validSpec()}
	got := WithDefaultTrigger(specs)
	if len(specs[0].Triggers) != 0 || len(got[0].Triggers) != 1 || got[0].Triggers[0].GetOnce() == nil || got[1] != specs[1] {
		t.Fatalf("WithDefaultTrigger: %v from %v", got, specs)
	}
}

// TestTriggerNames: a new task's unnamed triggers are named by index, an
// added one by the task's count past names a user took, and an update
// keeps a server-named trigger given again unnamed with its rule.
func TestTriggerNames(t *testing.T) {
	named := onceNow()
	named.Name = "#2"
	rec := &storev1.TaskRecord{Spec: &taskdv1.TaskSpec{Triggers: []*taskdv1.Trigger{onceNow(), named, onceNow()}}}
	NameNewTriggers(rec)
	var names []string
	for _, tr := range rec.Spec.Triggers {
		names = append(names, tr.Name)
	}
	if strings.Join(names, ",") != "#0,#2,#3" || rec.TriggerSeq != 3 {
		t.Fatalf("NameNewTriggers: %v, seq %d; want #0,#2,#3 and seq 3", names, rec.TriggerSeq)
	}
	used := map[string]bool{"#0": true, "#2": true, "#3": true}
	if name := NextTriggerName(rec, used); name != "#4" || rec.TriggerSeq != 5 {
		t.Fatalf("NextTriggerName: %s, seq %d; want #4 and seq 5", name, rec.TriggerSeq)
	}
	match, keep := MatchTriggers(rec.Spec.Triggers, []*taskdv1.Trigger{onceNow()})
	if match[0] != 0 || !keep[0] {
		t.Fatalf("MatchTriggers of an unnamed once trigger: %v %v, want the stored #0 kept", match, keep)
	}
	err := CheckServerNames("triggers", []*taskdv1.Trigger{named}, nil)
	want := `triggers[0].name: names beginning with "#" are given by the server to unnamed triggers, and "#2" is not one of the task's: leave the name empty, or choose another`
	if err == nil || err.Error() != want {
		t.Fatalf("CheckServerNames: %v, want %q", err, want)
	}
	runs := []*taskdv1.Run{{TriggerName: "#0"}, {TriggerName: "gone"}, {TriggerName: "gone", Manual: true}}
	MarkRemovedTriggers(rec, runs)
	if runs[0].TriggerRemoved || !runs[1].TriggerRemoved || runs[2].TriggerRemoved {
		t.Fatalf("MarkRemovedTriggers: %v", runs)
	}
}

// TestIdempotencyMismatch: a retry of the same request matches the task
// it stored (its delay and unnamed triggers resolved), another payload,
// jitter or trigger does not.
func TestIdempotencyMismatch(t *testing.T) {
	req := validSpec()
	req.Triggers[0].GetOnce().Delay = durationpb.New(time.Minute)
	stored := validSpec()
	stored.Triggers[0].Name = "#0"
	stored.Triggers[0].GetOnce().At = timestamppb.New(MinInstant)
	if f := IdempotencyMismatch(req, stored); f != "" {
		t.Fatalf("the same request: differs in %q", f)
	}
	req.Payload = []byte("p")
	if f := IdempotencyMismatch(req, stored); f != "payload" {
		t.Fatalf("another payload: differs in %q", f)
	}
	req.Payload = nil
	req.Triggers[0].Jitter = durationpb.New(time.Second)
	if f := IdempotencyMismatch(req, stored); f != "triggers[0].jitter" {
		t.Fatalf("another jitter: differs in %q", f)
	}
	req.Triggers[0].Jitter = nil
	req.Triggers[0].Kind = &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}
	if f := IdempotencyMismatch(req, stored); f != "triggers[0] (its kind)" {
		t.Fatalf("another trigger kind: differs in %q", f)
	}
}

// TestOutcomeRefusal: new data over --max-payload and a snooze past
// MaxInstant are refused saying what was too large.
func TestOutcomeRefusal(t *testing.T) {
	task := validSpec()
	if why := (OutcomeAsks{Data: make([]byte, 17), DataSet: true}).Refusal(task, 16); why != "data too large: 17 bytes > limit 16 (--max-payload)" {
		t.Fatalf("data over the limit: %q", why)
	}
	if why := (OutcomeAsks{Snooze: MaxInstant}).Refusal(task, 16); why != "snooze_until too far: 2200-01-01T00:00:00Z is not before 2200-01-01" {
		t.Fatalf("a snooze at MaxInstant: %q", why)
	}
	if why := (OutcomeAsks{Data: make([]byte, 16), DataSet: true, RetryAt: MaxInstant.Add(-time.Second)}).Refusal(task, 16); why != "" {
		t.Fatalf("an outcome within the limits: %q", why)
	}
}

package taskspec

import (
	"fmt"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file checks what a request asks beyond its specs: the size of a
// schedule batch, what an update may not change, a trigger edit and a
// preview, each before the node reads or writes anything.

// CheckBatch checks the number of specs given to Schedule.
func CheckBatch(n int) error {
	if n == 0 {
		return Invalid("tasks", "needs at least one task")
	}
	if n > MaxBatch {
		return Invalid("tasks", "has %d tasks, the limit is %d", n, MaxBatch)
	}
	return nil
}

// CheckUnchangeable refuses an update whose spec (at field in the request)
// changes what makes the task the one it is: its identity, kind, scope,
// durability or idempotency key.
func CheckUnchangeable(field string, old, next *taskdv1.TaskSpec) error {
	for _, f := range []struct {
		name     string
		same     bool
		was, now any
	}{
		{"identity", next.Identity == old.Identity, old.Identity, next.Identity},
		{"kind", next.Kind == old.Kind, old.Kind, next.Kind},
		{"scope", next.Scope == old.Scope, old.Scope, next.Scope},
		{"non_durable", next.NonDurable == old.NonDurable, old.NonDurable, next.NonDurable},
		{"idempotency_key", next.IdempotencyKey == old.IdempotencyKey, old.IdempotencyKey, next.IdempotencyKey},
	} {
		if !f.same {
			return Invalid(Subfield(field, f.name), "cannot change (it is %v, the update has %v); schedule a new task instead", f.was, f.now)
		}
	}
	return nil
}

// CheckTriggerEdit checks what can be checked of an edit before the task
// is read: each added trigger as a spec's, each name to remove.
func CheckTriggerEdit(add []*taskdv1.Trigger, remove []string) error {
	if len(add) > MaxTriggers {
		return Invalid("add_triggers", "has %d triggers, the limit is %d", len(add), MaxTriggers)
	}
	if len(remove) > MaxTriggers {
		return Invalid("remove_triggers", "has %d names, the limit is %d (a task has at most %d triggers)", len(remove), MaxTriggers, MaxTriggers)
	}
	if err := CheckTriggers("add_triggers", add); err != nil {
		return err
	}
	seen := map[string]int{}
	for i, name := range remove {
		f := fmt.Sprintf("remove_triggers[%d]", i)
		if name == "" {
			return Invalid(f, "is empty: give the name of a trigger of the task (GetTask shows them)")
		}
		if err := CheckText(f, name, MaxTriggerNameLen, true); err != nil {
			return err
		}
		if j, dup := seen[name]; dup {
			return Invalid(f, "%q is also remove_triggers[%d]", name, j)
		}
		seen[name] = i
	}
	return nil
}

// CheckPreview checks a PreviewTriggers request: its triggers as a spec's,
// its calendars (stored says which are stored) and its count, and returns
// the count to preview (0 asks for DefaultPreviewCount).
func CheckPreview(triggers []*taskdv1.Trigger, calendars []string, count int, stored func(name string) bool) (int, error) {
	if len(triggers) == 0 {
		return 0, Invalid("triggers", "needs at least one trigger")
	}
	if len(triggers) > MaxTriggers {
		return 0, Invalid("triggers", "has %d triggers, the limit is %d", len(triggers), MaxTriggers)
	}
	if err := CheckTriggers("triggers", triggers); err != nil {
		return 0, err
	}
	if err := CheckCalendarRefs("calendars", calendars, stored); err != nil {
		return 0, err
	}
	switch {
	case count == 0:
		count = DefaultPreviewCount
	case count < 0 || count > MaxPreviewCount:
		return 0, Invalid("count", "is %d, must be 1-%d (0 means %d)", count, MaxPreviewCount, DefaultPreviewCount)
	}
	return count, nil
}

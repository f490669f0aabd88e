package render

import (
	"strings"

	"github.com/taskd/taskd/internal/specdefaults"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// A task's settings as `get` shows them: the value the node applies, with
// "(default)" where the task leaves it to the node, never the bare word
// "default", which tells the reader nothing (internal/specdefaults holds
// the values the node uses).

// defaultMark is " (default)" for a default value.
func defaultMark(isDefault bool) string {
	if isDefault {
		return " (default)"
	}
	return ""
}

// describeBackoff renders the retry backoff in force as INITIAL,MAX, with
// which of them are defaults.
func describeBackoff(s specdefaults.Settings) string {
	v := humanDuration(s.BackoffInitial) + "," + humanDuration(s.BackoffMax)
	switch {
	case s.BackoffInitialDefault && s.BackoffMaxDefault:
		return v + " (default)"
	case s.BackoffInitialDefault:
		return v + " (initial default)"
	case s.BackoffMaxDefault:
		return v + " (max default)"
	}
	return v
}

// describeMisfire renders the task's misfire policy: its own, or, when it
// leaves it to its triggers' kinds, the policy each kind of its triggers
// without a policy of their own follows, e.g. "SKIP (default for cron),
// FIRE_ONCE_NOW (default for on-startup)".
func describeMisfire(spec *taskdv1.TaskSpec) string {
	if p := spec.GetMisfire(); specdefaults.Known(p) {
		return misfireName(p)
	}
	if parts := specdefaults.MisfireByKind(spec); len(parts) > 0 {
		return strings.Join(parts, ", ")
	}
	return "-" // every trigger has its own
}

// Package specdefaults holds the values a node applies where a TaskSpec
// leaves a setting unset (max_attempts, backoff, timeout, misfire), in one
// place for the node that applies them and for the tools that show a task
// (taskctl get, the console's task page), so that what they show as in
// force is what the node does.
//
// The run timeout is the one exception a program can change: a node
// embedded with Config.DefaultTimeout uses that instead of Timeout; the
// taskd binary always uses Timeout.
package specdefaults

import (
	"strings"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The defaults (taskd.v1.TaskSpec and Backoff).
const (
	// MaxAttempts is the attempts of one fire time before the task is DEAD.
	MaxAttempts = 25
	// BackoffInitial is the wait before the first retry.
	BackoffInitial = time.Second
	// BackoffMax caps a retry wait.
	BackoffMax = 10 * time.Minute
	// Timeout bounds one run.
	Timeout = 5 * time.Minute
)

// Settings are a task's retry and timeout settings as the node applies
// them, each with whether it is the default.
type Settings struct {
	MaxAttempts        int32
	MaxAttemptsDefault bool
	// BackoffInitial and BackoffMax are the retry waits; a max shorter than
	// the initial wait counts as the initial wait, as the node does.
	BackoffInitial, BackoffMax               time.Duration
	BackoffInitialDefault, BackoffMaxDefault bool
	Timeout                                  time.Duration
	TimeoutDefault                           bool
}

// Of returns the settings spec has in force. A zero value (or a missing
// one) is the default, as the node reads it.
func Of(spec *taskdv1.TaskSpec) Settings {
	s := Settings{
		MaxAttempts: spec.GetMaxAttempts(), BackoffInitial: spec.GetBackoff().GetInitial().AsDuration(),
		BackoffMax: spec.GetBackoff().GetMax().AsDuration(), Timeout: spec.GetTimeout().AsDuration(),
	}
	if s.MaxAttempts <= 0 {
		s.MaxAttempts, s.MaxAttemptsDefault = MaxAttempts, true
	}
	if s.BackoffInitial <= 0 {
		s.BackoffInitial, s.BackoffInitialDefault = BackoffInitial, true
	}
	if s.BackoffMax <= 0 {
		s.BackoffMax, s.BackoffMaxDefault = BackoffMax, true
	}
	s.BackoffMax = max(s.BackoffMax, s.BackoffInitial)
	if s.Timeout <= 0 {
		s.Timeout, s.TimeoutDefault = Timeout, true
	}
	return s
}

// Misfire is the misfire policy of a trigger kind (contract §4.4):
// FIRE_ONCE_NOW for once and on-start-up triggers, SKIP for recurring ones
// (periodic and cron: periods missed during downtime are not caught up).
func Misfire(t *taskdv1.Trigger) taskdv1.MisfirePolicy {
	if t.GetPeriodic() != nil || t.GetCron() != nil {
		return taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP
	}
	return taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW
}

// Known reports whether p is a policy (not unspecified, nor a value this
// version does not know).
func Known(p taskdv1.MisfirePolicy) bool {
	switch p {
	case taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP,
		taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
		taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL:
		return true
	}
	return false
}

// TriggerKind names a trigger's kind as the defaults are told: once,
// periodic, cron, on-startup.
func TriggerKind(t *taskdv1.Trigger) string {
	switch {
	case t.GetPeriodic() != nil:
		return "periodic"
	case t.GetCron() != nil:
		return "cron"
	case t.GetOnStartup() != nil:
		return "on-startup"
	}
	return "once"
}

// MisfireByKind lists the policies a task leaves to its triggers' kinds:
// one "POLICY (default for KIND)" per kind of its triggers without a policy
// of their own, in trigger order. It is nil when the task names its own
// policy (shown as is) or every trigger has one (shown with the trigger).
func MisfireByKind(spec *taskdv1.TaskSpec) []string {
	if Known(spec.GetMisfire()) {
		return nil
	}
	var parts []string
	seen := map[string]bool{}
	for _, t := range spec.GetTriggers() {
		if Known(t.GetMisfire()) {
			continue
		}
		if kind := TriggerKind(t); !seen[kind] {
			seen[kind] = true
			parts = append(parts, strings.TrimPrefix(Misfire(t).String(), "MISFIRE_POLICY_")+" (default for "+kind+")")
		}
	}
	return parts
}

package console

import (
	"strconv"
	"strings"
	"time"

	"github.com/taskd/taskd/internal/specdefaults"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// A task's settings as its page shows them: the values the node applies,
// "(default)" marking those the task leaves to the node, so that the page
// never says "backoff default to default" (internal/specdefaults holds the
// values the node uses).

// retries renders the retry and timeout settings in force, e.g. "max
// attempts 25 (default), backoff 1s (default) to 10m0s (default), timeout
// 5m0s (default)".
func retries(spec *taskdv1.TaskSpec) string {
	s := specdefaults.Of(spec)
	mark := func(isDefault bool) string {
		if isDefault {
			return " (default)"
		}
		return ""
	}
	d := func(v time.Duration, isDefault bool) string { return v.String() + mark(isDefault) }
	return "max attempts " + strconv.Itoa(int(s.MaxAttempts)) + mark(s.MaxAttemptsDefault) +
		", backoff " + d(s.BackoffInitial, s.BackoffInitialDefault) + " to " + d(s.BackoffMax, s.BackoffMaxDefault) +
		", timeout " + d(s.Timeout, s.TimeoutDefault)
}

// misfireInForce renders the task's misfire policy, or, when it leaves it
// to its triggers' kinds, the policy of each kind among its triggers
// without their own, e.g. "SKIP (default for cron), FIRE_ONCE_NOW (default
// for on-startup)".
func misfireInForce(spec *taskdv1.TaskSpec) string {
	if p := spec.GetMisfire(); specdefaults.Known(p) {
		return policyName(p)
	}
	if parts := specdefaults.MisfireByKind(spec); len(parts) > 0 {
		return strings.Join(parts, ", ")
	}
	return "each trigger's own"
}

func policyName(p taskdv1.MisfirePolicy) string {
	return strings.TrimPrefix(p.String(), "MISFIRE_POLICY_")
}

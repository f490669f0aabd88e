package taskspec

import (
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// IdempotencyMismatch compares a schedule request with the task its
// idempotency key already names and returns the first field that differs
// ("" if none). Only what the request states is compared: a delay, or a
// start left for the server to fill in, resolves to a different instant at
// each retry, so such trigger fields are not compared; everything else
// must be equal.
func IdempotencyMismatch(req, stored *taskdv1.TaskSpec) string {
	recovery := func(s *taskdv1.TaskSpec) bool { return s.RequestsRecovery == nil || s.GetRequestsRecovery() }
	switch {
	case req.Kind != stored.Kind:
		return "kind"
	case req.Scope != stored.Scope:
		return "scope"
	case string(req.Payload) != string(stored.Payload):
		return "payload"
	case req.NonDurable != stored.NonDurable:
		return "non_durable"
	case req.Misfire != stored.Misfire:
		return "misfire"
	case req.Priority != stored.Priority:
		return "priority"
	case req.MaxAttempts != stored.MaxAttempts:
		return "max_attempts"
	case !proto.Equal(req.Backoff, stored.Backoff):
		return "backoff"
	case !proto.Equal(req.Timeout, stored.Timeout):
		return "timeout"
	case recovery(req) != recovery(stored):
		return "requests_recovery"
	case req.AllowOverlap != stored.AllowOverlap:
		return "allow_overlap"
	case !slices.Equal(req.Calendars, stored.Calendars):
		return "calendars"
	case !maps.Equal(req.Labels, stored.Labels):
		return "labels"
	case len(req.Triggers) != len(stored.Triggers):
		return "triggers"
	}
	// data is not compared: the task's handler may have replaced it since.
	for i, rt := range req.Triggers {
		if f := triggerMismatch(rt, stored.Triggers[i]); f != "" {
			return fmt.Sprintf("triggers[%d]%s", i, f)
		}
	}
	return ""
}

func triggerMismatch(req, stored *taskdv1.Trigger) string {
	if req.Misfire != stored.Misfire {
		return ".misfire"
	}
	if req.GetJitter().AsDuration() != stored.GetJitter().AsDuration() {
		return ".jitter"
	}
	if req.Name != stored.Name && (req.Name != "" || !IsServerName(stored.Name)) {
		return ".name" // (a trigger asked for unnamed was named by the server)
	}
	switch r := req.Kind.(type) {
	case *taskdv1.Trigger_Once:
		s := stored.GetOnce()
		if s == nil {
			return ""
		}
		if r.Once.At != nil && !proto.Equal(r.Once.At, s.At) {
			return ".once.at"
		}
		return ""
	case *taskdv1.Trigger_Periodic:
		s := stored.GetPeriodic()
		switch {
		case s == nil:
		case !proto.Equal(r.Periodic.Interval, s.Interval):
			return ".periodic.interval"
		case r.Periodic.Start != nil && !proto.Equal(r.Periodic.Start, s.Start):
			return ".periodic.start"
		case !proto.Equal(r.Periodic.End, s.End):
			return ".periodic.end"
		case r.Periodic.Count != s.Count:
			return ".periodic.count"
		default:
			return ""
		}
	case *taskdv1.Trigger_Cron:
		s := stored.GetCron()
		switch {
		case s == nil:
		case r.Cron.Expression != s.Expression:
			return ".cron.expression"
		case r.Cron.TimeZone != s.TimeZone:
			return ".cron.time_zone"
		case r.Cron.Start != nil && !proto.Equal(r.Cron.Start, s.Start):
			return ".cron.start"
		case !proto.Equal(r.Cron.End, s.End):
			return ".cron.end"
		default:
			return ""
		}
	case *taskdv1.Trigger_OnStartup:
		if stored.GetOnStartup() != nil {
			return ""
		}
	}
	return " (its kind)"
}

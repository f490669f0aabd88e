package client

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file turns the plain types into the API's and back.

// toProto turns a spec into the API's form: a copy of Proto if it is set,
// which the caller may change.
func (s TaskSpec) toProto() *taskdv1.TaskSpec {
	if s.Proto != nil {
		return proto.Clone(s.Proto).(*taskdv1.TaskSpec)
	}
	p := &taskdv1.TaskSpec{
		Identity:       s.Identity,
		Kind:           s.Kind,
		Payload:        s.Payload,
		Data:           s.Data,
		NonDurable:     s.NonDurable,
		Scope:          scopeToProto(s.Scope),
		Misfire:        misfireToProto(s.Misfire),
		Priority:       s.Priority,
		MaxAttempts:    s.MaxAttempts,
		AllowOverlap:   s.AllowOverlap,
		Calendars:      s.Calendars,
		Labels:         s.Labels,
		IdempotencyKey: s.IdempotencyKey,
	}
	for _, t := range s.Triggers {
		p.Triggers = append(p.Triggers, t.toProto())
	}
	if s.Backoff.Initial > 0 || s.Backoff.Max > 0 {
		p.Backoff = &taskdv1.Backoff{Initial: durationOrNil(s.Backoff.Initial), Max: durationOrNil(s.Backoff.Max)}
	}
	p.Timeout = durationOrNil(s.Timeout)
	if s.NoRecovery {
		no := false
		p.RequestsRecovery = &no
	}
	return p
}

func (t Trigger) toProto() *taskdv1.Trigger {
	if t.Proto != nil {
		return t.Proto
	}
	p := &taskdv1.Trigger{Name: t.Name, Misfire: misfireToProto(t.Misfire), Jitter: durationOrNil(t.Jitter)}
	switch {
	case t.Cron != "":
		p.Kind = &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{
			Expression: t.Cron, TimeZone: t.TimeZone, Start: timeOrNil(t.Start), End: timeOrNil(t.End)}}
	case t.Interval != 0:
		p.Kind = &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
			Interval: durationpb.New(t.Interval), Start: timeOrNil(t.Start), End: timeOrNil(t.End), Count: t.Count}}
	case t.OnStartup:
		p.Kind = &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}
	default:
		p.Kind = &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: timeOrNil(t.At), Delay: durationOrNil(t.Delay)}}
	}
	return p
}

func triggerFromProto(p *taskdv1.Trigger) Trigger {
	t := Trigger{Name: p.GetName(), Misfire: misfireFromProto(p.GetMisfire()), Jitter: p.GetJitter().AsDuration()}
	switch k := p.GetKind().(type) {
	case *taskdv1.Trigger_Once:
		t.At, t.Delay = timeOf(k.Once.GetAt()), k.Once.GetDelay().AsDuration()
	case *taskdv1.Trigger_Periodic:
		t.Interval, t.Start, t.End, t.Count = k.Periodic.GetInterval().AsDuration(), timeOf(k.Periodic.GetStart()), timeOf(k.Periodic.GetEnd()), k.Periodic.GetCount()
	case *taskdv1.Trigger_Cron:
		t.Cron, t.TimeZone, t.Start, t.End = k.Cron.GetExpression(), k.Cron.GetTimeZone(), timeOf(k.Cron.GetStart()), timeOf(k.Cron.GetEnd())
	case *taskdv1.Trigger_OnStartup:
		t.OnStartup = true
	}
	return t
}

func specFromProto(p *taskdv1.TaskSpec) TaskSpec {
	s := TaskSpec{
		Identity:       p.GetIdentity(),
		Kind:           p.GetKind(),
		Payload:        p.GetPayload(),
		Data:           p.GetData(),
		NonDurable:     p.GetNonDurable(),
		Misfire:        misfireFromProto(p.GetMisfire()),
		Priority:       p.GetPriority(),
		MaxAttempts:    p.GetMaxAttempts(),
		Backoff:        Backoff{Initial: p.GetBackoff().GetInitial().AsDuration(), Max: p.GetBackoff().GetMax().AsDuration()},
		Timeout:        p.GetTimeout().AsDuration(),
		NoRecovery:     p.RequestsRecovery != nil && !p.GetRequestsRecovery(),
		AllowOverlap:   p.GetAllowOverlap(),
		Calendars:      p.GetCalendars(),
		Labels:         p.GetLabels(),
		IdempotencyKey: p.GetIdempotencyKey(),
	}
	switch p.GetScope() {
	case taskdv1.Scope_SCOPE_IDENTITY:
		s.Scope = ScopeIdentity
	case taskdv1.Scope_SCOPE_EVERY_NODE:
		s.Scope = ScopeEveryNode
	}
	for _, t := range p.GetTriggers() {
		s.Triggers = append(s.Triggers, triggerFromProto(t))
	}
	return s
}

func taskFromProto(p *taskdv1.Task) *Task {
	if p == nil {
		return nil
	}
	t := &Task{
		ID:            p.GetId(),
		Spec:          specFromProto(p.GetSpec()),
		State:         State(enumName(p.GetState().String(), "TASK_STATE_")),
		CreatedAt:     timeOf(p.GetCreatedAt()),
		FinishedAt:    timeOf(p.GetFinishedAt()),
		NextFireTime:  timeOf(p.GetNextFireTime()),
		RunCount:      p.GetRunCount(),
		Attempt:       p.GetAttempt(),
		Revision:      p.GetRevision(),
		Paused:        p.GetPaused(),
		PausedBy:      p.GetPausedBy(),
		Misfires:      p.GetMisfires(),
		Waiting:       p.GetWaiting(),
		WaitingSince:  timeOf(p.GetWaitingSince()),
		WaitingReason: p.GetWaitingReason(),
		Proto:         p,
	}
	for _, ts := range p.GetNextFireTimes() {
		t.NextFireTimes = append(t.NextFireTimes, timeOf(ts))
	}
	if lr := p.GetLastRun(); lr != nil {
		t.LastRun = &RunSummary{
			RunNumber: lr.GetRunNumber(),
			Outcome:   outcomeOf(lr.GetOutcome()),
			StartedAt: timeOf(lr.GetStartedAt()),
			EndedAt:   timeOf(lr.GetEndedAt()),
			Node:      lr.GetNode(),
			Message:   lr.GetMessage(),
		}
	}
	return t
}

func runFromProto(p *taskdv1.Run) Run {
	return Run{
		TaskID:         p.GetTaskId(),
		RunNumber:      p.GetRunNumber(),
		Attempt:        p.GetAttempt(),
		FireTime:       timeOf(p.GetFireTime()),
		StartedAt:      timeOf(p.GetStartedAt()),
		EndedAt:        timeOf(p.GetEndedAt()),
		Node:           p.GetNode(),
		Outcome:        outcomeOf(p.GetOutcome()),
		Message:        p.GetMessage(),
		Fence:          p.GetFence(),
		Manual:         p.GetManual(),
		Recovery:       p.GetRecovery(),
		Trigger:        p.GetTrigger(),
		TriggerName:    p.GetTriggerName(),
		TriggerRemoved: p.GetTriggerRemoved(),
		Proto:          p,
	}
}

func identityFromProto(p *taskdv1.Identity) *Identity {
	return &Identity{
		Name:        p.GetIdentity(),
		Mapped:      p.GetMapped(),
		Node:        p.GetNode(),
		Epoch:       p.GetEpoch(),
		TaskCount:   p.GetTaskCount(),
		Active:      p.GetActive(),
		StatusNode:  p.GetStatusNode(),
		StatusSince: timeOf(p.GetStatusSince()),
		Proto:       p,
	}
}

func nodeFromProto(p *taskdv1.Node) Node {
	return Node{
		Name:            p.GetName(),
		Incarnation:     p.GetIncarnation(),
		Address:         p.GetAddress(),
		State:           NodeState(enumName(p.GetState().String(), "NODE_STATE_")),
		StartedAt:       timeOf(p.GetStartedAt()),
		DispatchStart:   timeOf(p.GetDispatchStart()),
		IdentitiesOwned: p.GetIdentitiesOwned(),
		Kinds:           p.GetKinds(),
		Leader:          p.GetLeader(),
		LeaseRemaining:  p.GetLeaseRemaining().AsDuration(),
		Proto:           p,
	}
}

func eventFromProto(p *taskdv1.Event) Event {
	return Event{
		Type:        EventType(enumName(p.GetType().String(), "EVENT_TYPE_")),
		Time:        timeOf(p.GetTime()),
		Node:        p.GetNode(),
		Identity:    p.GetIdentity(),
		TaskID:      p.GetTaskId(),
		Kind:        p.GetKind(),
		RunNumber:   p.GetRunNumber(),
		Attempt:     p.GetAttempt(),
		Fence:       p.GetFence(),
		Outcome:     outcomeOf(p.GetOutcome()),
		Message:     p.GetMessage(),
		Next:        timeOf(p.GetNext()),
		FireTime:    timeOf(p.GetFireTime()),
		Count:       p.GetCount(),
		Trigger:     p.GetTrigger(),
		TriggerName: p.GetTriggerName(),
		Cursor:      p.GetCursor(),
		Proto:       p,
	}
}

func pauseFromProto(p *taskdv1.Pause) Pause {
	return Pause{Identity: p.GetIdentity(), Kind: p.GetKind(), Since: timeOf(p.GetSince()), Proto: p}
}

func outcomeOf(o taskdv1.Outcome) Outcome {
	if o == taskdv1.Outcome_OUTCOME_UNSPECIFIED {
		return ""
	}
	return Outcome(enumName(o.String(), "OUTCOME_"))
}

func scopeToProto(s Scope) taskdv1.Scope {
	switch s {
	case ScopeIdentity:
		return taskdv1.Scope_SCOPE_IDENTITY
	case ScopeEveryNode:
		return taskdv1.Scope_SCOPE_EVERY_NODE
	}
	// Left unspecified, the server refuses it naming the field.
	return taskdv1.Scope_SCOPE_UNSPECIFIED
}

func misfireToProto(m Misfire) taskdv1.MisfirePolicy {
	switch m {
	case MisfireOnceNow:
		return taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW
	case MisfireSkip:
		return taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP
	case MisfireFireAll:
		return taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL
	}
	return taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED
}

func misfireFromProto(m taskdv1.MisfirePolicy) Misfire {
	switch m {
	case taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW:
		return MisfireOnceNow
	case taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP:
		return MisfireSkip
	case taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL:
		return MisfireFireAll
	}
	return MisfireDefault
}

func stateToProto(s State) taskdv1.TaskState {
	return taskdv1.TaskState(taskdv1.TaskState_value["TASK_STATE_"+strings.ToUpper(string(s))])
}

func eventTypeToProto(t EventType) taskdv1.EventType {
	return taskdv1.EventType(taskdv1.EventType_value["EVENT_TYPE_"+strings.ToUpper(string(t))])
}

// enumsToProto converts each of names by toProto, refusing one that is
// not a value (toProto gives UNSPECIFIED, 0): field[i] of op "is not
// what".
func enumsToProto[S ~string, E ~int32](op, field string, names []S, toProto func(S) E, what string) ([]E, error) {
	var out []E
	for i, s := range names {
		e := toProto(s)
		if e == 0 {
			return nil, invalid(op, fmt.Sprintf("%s[%d]", field, i), "%q is not %s", s, what)
		}
		out = append(out, e)
	}
	return out, nil
}

func enumName(name, prefix string) string { return strings.TrimPrefix(name, prefix) }

func timeOf(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}

func timeOrNil(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func durationOrNil(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

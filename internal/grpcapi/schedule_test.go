package grpcapi_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/grpcapi"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func TestScheduleRejectsBadInput(t *testing.T) {
	node := apiStart(t)
	c := node.Client
	ctx := apiCtx(t)

	// The base spec is valid, and so are the limits themselves: the cases
	// below fail only by what they change.
	edge := apiSpec(strings.Repeat("e", identity.MaxLen))
	edge.Payload = make([]byte, 256<<10)
	edge.Data = make([]byte, 256<<10)
	edge.Triggers = nil
	for range taskservice.MaxTriggers {
		edge.Triggers = append(edge.Triggers, apiOnce())
	}
	edge.MaxAttempts = taskservice.MaxAttemptsLimit
	edge.Labels = map[string]string{}
	for i := range taskservice.MaxLabels {
		edge.Labels[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", taskservice.MaxLabelValueLen)
	}
	edge.IdempotencyKey = strings.Repeat("i", taskservice.MaxIdempotencyKeyLen)
	if _, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: edge}); err != nil {
		t.Fatalf("a task at every limit was rejected: %v", err)
	}
	if _, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: apiSpec("control")}); err != nil {
		t.Fatalf("the base spec was rejected: %v", err)
	}

	ts := func(sec int64) *timestamppb.Timestamp { return &timestamppb.Timestamp{Seconds: sec} }
	once := func(o *taskdv1.OnceTrigger) []*taskdv1.Trigger {
		return []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: o}}}
	}
	periodic := func(p *taskdv1.PeriodicTrigger) []*taskdv1.Trigger {
		return []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: p}}}
	}
	hour := durationpb.New(time.Hour)
	now := time.Now().Unix()

	cases := []struct {
		name  string
		mut   func(s *taskdv1.TaskSpec)
		code  codes.Code
		field string
		msg   string // more text the message must contain
	}{
		{"empty identity", func(s *taskdv1.TaskSpec) { s.Identity = "" }, codes.InvalidArgument, "task.identity", ""},
		{"identity of 257 bytes", func(s *taskdv1.TaskSpec) { s.Identity = strings.Repeat("x", 257) }, codes.InvalidArgument, "task.identity", ""},
		{"identity with a control char", func(s *taskdv1.TaskSpec) { s.Identity = "bad\x01id" }, codes.InvalidArgument, "task.identity", "control"},
		{"identity with DEL", func(s *taskdv1.TaskSpec) { s.Identity = "bad\x7fid" }, codes.InvalidArgument, "task.identity", "control"},
		{"identity with a C1 control", func(s *taskdv1.TaskSpec) { s.Identity = "bad\u0085id" }, codes.InvalidArgument, "task.identity", "control"},
		{"empty kind", func(s *taskdv1.TaskSpec) { s.Kind = "" }, codes.InvalidArgument, "task.kind", ""},
		{"kind of 129 bytes", func(s *taskdv1.TaskSpec) { s.Kind = strings.Repeat("k", 129) }, codes.InvalidArgument, "task.kind", ""},
		{"unknown kind", func(s *taskdv1.TaskSpec) { s.Kind = "nobody-handles-this" }, codes.InvalidArgument, "task.kind", "no node of the cluster handles"},
		{"unknown kind, non-durable", func(s *taskdv1.TaskSpec) { s.Kind = "nobody-handles-this"; s.NonDurable = true }, codes.InvalidArgument, "task.kind", ""},
		{"missing scope", func(s *taskdv1.TaskSpec) { s.Scope = taskdv1.Scope_SCOPE_UNSPECIFIED }, codes.InvalidArgument, "task.scope", "required"},
		{"unknown scope", func(s *taskdv1.TaskSpec) { s.Scope = 99 }, codes.InvalidArgument, "task.scope", ""},
		{"payload too large", func(s *taskdv1.TaskSpec) { s.Payload = make([]byte, 256<<10+1) }, codes.InvalidArgument, "task.payload", ""},
		{"data too large", func(s *taskdv1.TaskSpec) { s.Data = make([]byte, 256<<10+1) }, codes.InvalidArgument, "task.data", ""},
		{"17 triggers", func(s *taskdv1.TaskSpec) {
			s.Triggers = nil
			for range 17 {
				s.Triggers = append(s.Triggers, apiOnce())
			}
		}, codes.InvalidArgument, "task.triggers", ""},
		{"trigger with no kind", func(s *taskdv1.TaskSpec) { s.Triggers = []*taskdv1.Trigger{{}} }, codes.InvalidArgument, "task.triggers[0]", ""},
		{"once with at and delay", func(s *taskdv1.TaskSpec) {
			s.Triggers = once(&taskdv1.OnceTrigger{At: ts(now + 3600), Delay: hour})
		}, codes.InvalidArgument, "task.triggers[0].once", ""},
		{"once with an invalid at", func(s *taskdv1.TaskSpec) {
			s.Triggers = once(&taskdv1.OnceTrigger{At: &timestamppb.Timestamp{Seconds: now, Nanos: 2e9}})
		}, codes.InvalidArgument, "task.triggers[0].once.at", ""},
		{"once with a negative delay", func(s *taskdv1.TaskSpec) {
			s.Triggers = once(&taskdv1.OnceTrigger{Delay: durationpb.New(-time.Second)})
		}, codes.InvalidArgument, "task.triggers[0].once.delay", ""},
		{"bad second trigger", func(s *taskdv1.TaskSpec) {
			s.Triggers = append(s.Triggers, once(&taskdv1.OnceTrigger{Delay: durationpb.New(-time.Second)})...)
		}, codes.InvalidArgument, "task.triggers[1].once.delay", ""},
		{"periodic without interval", func(s *taskdv1.TaskSpec) {
			s.Triggers = periodic(&taskdv1.PeriodicTrigger{})
		}, codes.InvalidArgument, "task.triggers[0].periodic.interval", ""},
		{"periodic interval 0", func(s *taskdv1.TaskSpec) {
			s.Triggers = periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(0)})
		}, codes.InvalidArgument, "task.triggers[0].periodic.interval", ""},
		{"periodic interval 500µs", func(s *taskdv1.TaskSpec) {
			s.Triggers = periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(500 * time.Microsecond)})
		}, codes.InvalidArgument, "task.triggers[0].periodic.interval", ""},
		{"jitter not below the interval", func(s *taskdv1.TaskSpec) {
			s.Triggers = periodic(&taskdv1.PeriodicTrigger{Interval: hour})
			s.Triggers[0].Jitter = hour
		}, codes.InvalidArgument, "task.triggers[0].jitter", "less than the interval"},
		{"jitter over 24h", func(s *taskdv1.TaskSpec) {
			s.Triggers = periodic(&taskdv1.PeriodicTrigger{Interval: durationpb.New(48 * time.Hour)})
			s.Triggers[0].Jitter = durationpb.New(25 * time.Hour)
		}, codes.InvalidArgument, "task.triggers[0].jitter", "24h"},
		{"negative jitter", func(s *taskdv1.TaskSpec) {
			s.Triggers = periodic(&taskdv1.PeriodicTrigger{Interval: hour})
			s.Triggers[0].Jitter = durationpb.New(-time.Second)
		}, codes.InvalidArgument, "task.triggers[0].jitter", ""},
		{"jitter on a once trigger", func(s *taskdv1.TaskSpec) {
			s.Triggers = once(&taskdv1.OnceTrigger{Delay: hour})
			s.Triggers[0].Jitter = durationpb.New(time.Second)
		}, codes.InvalidArgument, "task.triggers[0].jitter", "only periodic and cron"},
		{"jitter on an on-start-up trigger", func(s *taskdv1.TaskSpec) {
			s.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}, Jitter: durationpb.New(time.Second)}}
		}, codes.InvalidArgument, "task.triggers[0].jitter", "only periodic and cron"},
		{"periodic negative count", func(s *taskdv1.TaskSpec) {
			s.Triggers = periodic(&taskdv1.PeriodicTrigger{Interval: hour, Count: -1})
		}, codes.InvalidArgument, "task.triggers[0].periodic.count", ""},
		{"periodic with an invalid start", func(s *taskdv1.TaskSpec) {
			s.Triggers = periodic(&taskdv1.PeriodicTrigger{Interval: hour, Start: &timestamppb.Timestamp{Seconds: now, Nanos: -1}})
		}, codes.InvalidArgument, "task.triggers[0].periodic.start", ""},
		{"periodic end before start", func(s *taskdv1.TaskSpec) {
			s.Triggers = periodic(&taskdv1.PeriodicTrigger{Interval: hour, Start: ts(now + 7200), End: ts(now + 3600)})
		}, codes.InvalidArgument, "task.triggers[0].periodic.end", ""},
		{"unknown misfire policy", func(s *taskdv1.TaskSpec) { s.Misfire = 99 }, codes.InvalidArgument, "task.misfire", ""},
		{"max_attempts -1", func(s *taskdv1.TaskSpec) { s.MaxAttempts = -1 }, codes.InvalidArgument, "task.max_attempts", ""},
		{"max_attempts 1001", func(s *taskdv1.TaskSpec) { s.MaxAttempts = 1001 }, codes.InvalidArgument, "task.max_attempts", ""},
		{"negative backoff initial", func(s *taskdv1.TaskSpec) {
			s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(-time.Second)}
		}, codes.InvalidArgument, "task.backoff.initial", ""},
		{"negative backoff max", func(s *taskdv1.TaskSpec) {
			s.Backoff = &taskdv1.Backoff{Max: durationpb.New(-time.Second)}
		}, codes.InvalidArgument, "task.backoff.max", ""},
		{"backoff max below initial", func(s *taskdv1.TaskSpec) {
			s.Backoff = &taskdv1.Backoff{Initial: durationpb.New(time.Minute), Max: durationpb.New(time.Second)}
		}, codes.InvalidArgument, "task.backoff.max", ""},
		{"negative timeout", func(s *taskdv1.TaskSpec) { s.Timeout = durationpb.New(-time.Second) }, codes.InvalidArgument, "task.timeout", ""},
		{"too many labels", func(s *taskdv1.TaskSpec) {
			s.Labels = map[string]string{}
			for i := range taskservice.MaxLabels + 1 {
				s.Labels[fmt.Sprintf("k%02d", i)] = "v"
			}
		}, codes.InvalidArgument, "task.labels", ""},
		{"empty label key", func(s *taskdv1.TaskSpec) { s.Labels = map[string]string{"": "v"} }, codes.InvalidArgument, "task.labels", ""},
		{"label value too long", func(s *taskdv1.TaskSpec) {
			s.Labels = map[string]string{"k": strings.Repeat("v", taskservice.MaxLabelValueLen+1)}
		}, codes.InvalidArgument, "task.labels[k]", ""},
		{"idempotency key of 257 bytes", func(s *taskdv1.TaskSpec) { s.IdempotencyKey = strings.Repeat("i", 257) }, codes.InvalidArgument, "task.idempotency_key", ""},
		{"scope EVERY_NODE non-durable", func(s *taskdv1.TaskSpec) { s.Scope = taskdv1.Scope_SCOPE_EVERY_NODE; s.NonDurable = true }, codes.InvalidArgument, "task.non_durable", ""},
		{"allow_overlap on EVERY_NODE", func(s *taskdv1.TaskSpec) { s.AllowOverlap = true; s.Scope = taskdv1.Scope_SCOPE_EVERY_NODE }, codes.InvalidArgument, "task.allow_overlap", ""},
		{"calendar that does not exist", func(s *taskdv1.TaskSpec) { s.Calendars = []string{"holidays"} }, codes.InvalidArgument, "task.calendars[0]", "no calendar"},
		{"too many calendars", func(s *taskdv1.TaskSpec) {
			for i := range taskservice.MaxCalendarsPerTask + 1 {
				s.Calendars = append(s.Calendars, fmt.Sprintf("c%d", i))
			}
		}, codes.InvalidArgument, "task.calendars", ""},
		{"cron expression with a bad field", func(s *taskdv1.TaskSpec) {
			s.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 25 * * ?"}}}}
		}, codes.InvalidArgument, "task.triggers[0].cron.expression", "hours"},
		{"cron with both ? fields", func(s *taskdv1.TaskSpec) {
			s.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 12 ? * ?"}}}}
		}, codes.InvalidArgument, "task.triggers[0].cron.expression", "position"},
		{"cron unknown zone", func(s *taskdv1.TaskSpec) {
			s.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 12 * * ?", TimeZone: "Mars/Olympus"}}}}
		}, codes.InvalidArgument, "task.triggers[0].cron.time_zone", "Mars/Olympus"},
		{"cron end before start", func(s *taskdv1.TaskSpec) {
			now := time.Now()
			s.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 12 * * ?",
				Start: timestamppb.New(now), End: timestamppb.New(now.Add(-time.Hour))}}}}
		}, codes.InvalidArgument, "task.triggers[0].cron.end", ""},
		{"trigger misfire unknown", func(s *taskdv1.TaskSpec) { s.Triggers[0].Misfire = 9 }, codes.InvalidArgument, "task.triggers[0].misfire", ""},
		{"trigger names repeated", func(s *taskdv1.TaskSpec) {
			s.Triggers = []*taskdv1.Trigger{
				{Name: "x", Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}},
				{Name: "x", Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}}}
		}, codes.InvalidArgument, "task.triggers[1].name", ""},
	}

	var used []string // valid identities that rejected requests named
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := apiSpec(fmt.Sprintf("bad-input-%02d", i))
			tc.mut(s)
			if identity.Validate(s.Identity) == nil {
				used = append(used, s.Identity)
			}
			_, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
			apiWantCode(t, err, tc.code, tc.field)
			if tc.msg != "" && !strings.Contains(status.Convert(err).Message(), tc.msg) {
				t.Fatalf("message %q does not say %q", status.Convert(err).Message(), tc.msg)
			}
		})
	}

	t.Run("task nil", func(t *testing.T) {
		_, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{})
		apiWantCode(t, err, codes.InvalidArgument, "task")
	})

	// A proto3 string must be UTF-8, so the generated client refuses to
	// send an identity that is not; the node's own validation names the
	// field, and a client that sends the bytes anyway is refused too.
	t.Run("invalid UTF-8 identity", func(t *testing.T) {
		bad := "bad-utf8-\xff\xfe"
		_, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: apiSpec(bad)})
		if err == nil {
			t.Fatal("the client sent an identity that is not UTF-8 and it was accepted")
		}

		// The library names the field relative to the spec, and the API
		// under the request's path of it.
		_, err = node.Schedule(ctx, []*taskdv1.TaskSpec{apiSpec(bad)})
		var se *taskservice.SpecError
		if !errors.As(err, &se) || se.Index != 0 || se.Field != "identity" || se.Err != nil {
			t.Fatalf("Node.Schedule with an identity that is not UTF-8: got %v, want a SpecError on the identity of spec 0", err)
		}
		var ia *taskservice.InvalidArgumentError
		if !errors.As(se.In("task"), &ia) || ia.Field != "task.identity" {
			t.Fatalf("Node.Schedule with an identity that is not UTF-8: got %v in a ScheduleTask request, want an InvalidArgumentError on task.identity", se.In("task"))
		}
		apiWantCode(t, grpcapi.Status(err), codes.InvalidArgument, "tasks[0].identity")

		// On the wire: "bad-utf8-XX" becomes "bad-utf8-\xff\xfe".
		codec := apiSwapCodec{from: []byte("bad-utf8-XX"), to: []byte(bad)}
		_, err = c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: apiSpec("bad-utf8-XX")}, grpc.ForceCodec(codec))
		st := status.Convert(err)
		switch {
		case err == nil:
			t.Fatal("the server accepted an identity that is not UTF-8")
		case st.Code() == codes.InvalidArgument:
			apiWantCode(t, err, codes.InvalidArgument, "task.identity")
		case st.Code() == codes.Internal && strings.Contains(st.Message(), "UTF-8"):
			// grpc-go's decoder refuses the request before the API sees it,
			// as INTERNAL without the field (contract §10 asks for
			// INVALID_ARGUMENT naming task.identity).
			t.Logf("the server refused the request before validation: %s: %s", st.Code(), st.Message())
		default:
			t.Fatalf("got %s (%q) for an identity that is not UTF-8", st.Code(), st.Message())
		}
		used = append(used, "bad-utf8-XX") // had the swap gone wrong, it would be stored under this
	})

	// Nothing any rejected request named was written.
	for _, id := range used {
		apiWantNothing(ctx, t, c, id)
	}
}

// TestScheduleNamesFieldsRelativeToTheSpec: Node.Schedule names a spec's
// wrong field relative to the spec, with the spec's index; its message
// names it as ScheduleTasks does, and the API names it (and a field its
// reason refers to) under the request's path of the spec.
func TestScheduleNamesFieldsRelativeToTheSpec(t *testing.T) {
	node := apiStart(t)
	ctx := apiCtx(t)
	dup := apiSpec("relative")
	startup := func(name string) *taskdv1.Trigger {
		return &taskdv1.Trigger{Name: name, Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}}
	}
	dup.Triggers = []*taskdv1.Trigger{startup("x"), startup("y"), startup("x")}

	_, err := node.Schedule(ctx, []*taskdv1.TaskSpec{apiSpec("relative"), dup})
	var se *taskservice.SpecError
	if !errors.As(err, &se) || se.Index != 1 || se.Field != "triggers[2].name" {
		t.Fatalf("Node.Schedule: got %v, want a SpecError on triggers[2].name of spec 1", err)
	}
	if want := `tasks[1].triggers[2].name: "x" is also the name of tasks[1].triggers[0]`; err.Error() != want {
		t.Fatalf("Node.Schedule's message is %q, want %q", err.Error(), want)
	}
	want := `task.triggers[2].name: "x" is also the name of task.triggers[0]`
	if got := se.In("task").Error(); got != want {
		t.Fatalf("In(task) is %q, want %q", got, want)
	}
	_, err = node.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: dup})
	if status.Code(err) != codes.InvalidArgument || status.Convert(err).Message() != want {
		t.Fatalf("ScheduleTask: got %v, want INVALID_ARGUMENT %q", err, want)
	}
	_, err = node.Client.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: []*taskdv1.TaskSpec{dup}})
	if want := `tasks[0].triggers[2].name: "x" is also the name of tasks[0].triggers[0]`; status.Convert(err).Message() != want {
		t.Fatalf("ScheduleTasks: got %v, want INVALID_ARGUMENT %q", err, want)
	}
	apiWantNothing(ctx, t, node.Client, "relative")
}

func TestScheduleTasksBatch(t *testing.T) {
	c, ctx := apiClient(t)

	const n, idents = 100, 7
	specs := make([]*taskdv1.TaskSpec, n)
	for i := range specs {
		specs[i] = apiSpec(fmt.Sprintf("batch-%d", i%idents))
		specs[i].Payload = []byte(fmt.Sprintf("task %d", i))
	}
	resp, err := c.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: specs})
	if err != nil {
		t.Fatalf("ScheduleTasks of %d: %v", n, err)
	}
	if len(resp.Tasks) != n {
		t.Fatalf("ScheduleTasks returned %d tasks, want %d", len(resp.Tasks), n)
	}
	seen := map[string]int{}
	for i, task := range resp.Tasks {
		if task.Spec.GetIdentity() != specs[i].Identity || !bytes.Equal(task.Spec.GetPayload(), specs[i].Payload) {
			t.Fatalf("tasks[%d] is %q/%q, want %q/%q: not in request order", i,
				task.Spec.GetIdentity(), task.Spec.GetPayload(), specs[i].Identity, specs[i].Payload)
		}
		if !pending.ValidTaskID(task.Id) {
			t.Fatalf("tasks[%d] has id %q", i, task.Id)
		}
		if j, dup := seen[task.Id]; dup {
			t.Fatalf("tasks[%d] and tasks[%d] have the same id %s", j, i, task.Id)
		}
		seen[task.Id] = i
		if task.State != taskdv1.TaskState_TASK_STATE_SCHEDULED {
			t.Fatalf("tasks[%d] is %s", i, task.State)
		}
	}
	total := 0
	for k := range idents {
		id := fmt.Sprintf("batch-%d", k)
		tasks := apiListAll(ctx, t, c, id)
		want := (n - k + idents - 1) / idents
		if len(tasks) != want {
			t.Errorf("identity %s has %d tasks, want %d", id, len(tasks), want)
		}
		for _, task := range tasks {
			if _, ok := seen[task.Id]; !ok {
				t.Errorf("identity %s lists task %s that the batch did not return", id, task.Id)
			}
		}
		total += len(tasks)
	}
	if total != n {
		t.Fatalf("%d tasks stored, want %d", total, n)
	}

	// Too many.
	big := make([]*taskdv1.TaskSpec, taskservice.MaxBatch+1)
	for i := range big {
		big[i] = apiSpec("too-many")
	}
	_, err = c.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: big})
	apiWantCode(t, err, codes.InvalidArgument, "tasks")

	// None.
	_, err = c.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{})
	apiWantCode(t, err, codes.InvalidArgument, "tasks")

	// One bad task rejects the whole batch, and names itself.
	var partial []*taskdv1.TaskSpec
	for i := range 5 {
		partial = append(partial, apiSpec(fmt.Sprintf("partial-%d", i)))
	}
	partial = append(partial, apiSpec("partial-0"))
	partial[2].Kind = ""
	_, err = c.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: partial})
	apiWantCode(t, err, codes.InvalidArgument, "tasks[2].kind")

	// A batch of one still names its index.
	_, err = c.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: []*taskdv1.TaskSpec{{Identity: "partial-9"}}})
	apiWantCode(t, err, codes.InvalidArgument, "tasks[0].kind")

	for _, id := range []string{"too-many", "partial-0", "partial-1", "partial-2", "partial-3", "partial-4", "partial-9"} {
		apiWantNothing(ctx, t, c, id)
	}
}

func TestIdempotencyKey(t *testing.T) {
	c, ctx := apiClient(t)

	first := apiSpec("erin")
	first.IdempotencyKey = "order-42"
	first.Payload = []byte("first")
	r1, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: first})
	if err != nil {
		t.Fatalf("first ScheduleTask: %v", err)
	}
	if r1.Existing {
		t.Fatal("the first task with a key came back as existing")
	}

	// The same key with another spec is refused naming what differs: not
	// a silent success that drops the caller's new task.
	differs := proto.Clone(first).(*taskdv1.TaskSpec)
	differs.Payload = []byte("second")
	_, err = c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: differs})
	if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), "task.idempotency_key") ||
		!strings.Contains(err.Error(), "payload") || !strings.Contains(err.Error(), r1.Task.Id) {
		t.Fatalf("same key, other payload: %v; want ALREADY_EXISTS naming the key, the task and payload", err)
	}
	differs = proto.Clone(first).(*taskdv1.TaskSpec)
	differs.Triggers = []*taskdv1.Trigger{apiPeriodic(time.Hour)}
	if _, err = c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: differs}); status.Code(err) != codes.AlreadyExists ||
		!strings.Contains(err.Error(), "triggers[0]") {
		t.Fatalf("same key, other trigger: %v; want ALREADY_EXISTS naming triggers[0]", err)
	}

	// A retry of the same request returns the first task.
	second := proto.Clone(first).(*taskdv1.TaskSpec)
	r2, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: second})
	if err != nil {
		t.Fatalf("second ScheduleTask: %v", err)
	}
	if !r2.Existing {
		t.Fatal("the second task with the same key was not marked existing")
	}
	if r2.Task.Id != r1.Task.Id {
		t.Fatalf("the same key made a second task: %s, then %s", r1.Task.Id, r2.Task.Id)
	}
	tasks := apiListAll(ctx, t, c, "erin")
	if len(tasks) != 1 || tasks[0].Id != r1.Task.Id {
		t.Fatalf("erin has %d tasks, want only %s", len(tasks), r1.Task.Id)
	}

	// The same key in a batch is answered the same way.
	rb, err := c.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: []*taskdv1.TaskSpec{second, apiSpec("erin")}})
	if err != nil {
		t.Fatalf("ScheduleTasks: %v", err)
	}
	if rb.Tasks[0].Id != r1.Task.Id || rb.Tasks[1].Id == r1.Task.Id {
		t.Fatalf("batch returned %s and %s, want %s and a new task", rb.Tasks[0].Id, rb.Tasks[1].Id, r1.Task.Id)
	}
	if tasks := apiListAll(ctx, t, c, "erin"); len(tasks) != 2 {
		t.Fatalf("erin has %d tasks after the batch, want 2", len(tasks))
	}

	// Keys belong to their identity.
	other := apiSpec("frank")
	other.IdempotencyKey = "order-42"
	r3, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: other})
	if err != nil {
		t.Fatalf("ScheduleTask for frank: %v", err)
	}
	if r3.Existing || r3.Task.Id == r1.Task.Id || r3.Task.Spec.GetIdentity() != "frank" {
		t.Fatalf("frank's task with erin's key: existing=%v id=%s identity=%q", r3.Existing, r3.Task.Id, r3.Task.Spec.GetIdentity())
	}
	if tasks := apiListAll(ctx, t, c, "frank"); len(tasks) != 1 || tasks[0].Id != r3.Task.Id {
		t.Fatalf("frank has %d tasks, want only %s", len(tasks), r3.Task.Id)
	}
}

package taskservice_test

import (
	"bytes"
	"context"
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

	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	"github.com/taskd/taskd/pkg/taskservice"
	"github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file tests the gRPC API of one real node over a real etcd: input
// validation (contract §10), batches, paging, idempotency keys, cancel and run
// now, and the identity and node views.

// apiStart starts an etcd and one node "n1" handling the kind "noop", with
// its API on loopback.
func apiStart(t *testing.T) *taskservicetest.Node {
	t.Helper()
	e := taskservicetest.StartEtcd(t)
	cli := e.Client(t)
	return taskservicetest.StartNode(t, cli, taskservice.Config{
		Name: "n1",
		Handlers: map[string]taskservice.Handler{
			"noop": taskservice.HandlerFunc(func(ctx context.Context, r *taskservice.Run) error { return nil }),
		},
	})
}

// apiCtx is the context of one test's calls.
func apiCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// apiOnce is a once trigger an hour from now: the task stays SCHEDULED for
// the whole test.
func apiOnce() *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{Delay: durationpb.New(time.Hour)}}}
}

// apiPeriodic is a periodic trigger of the given interval (first fire one
// interval from now).
func apiPeriodic(interval time.Duration) *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(interval)}}}
}

// apiSpec is a valid durable task for id that does not fire during a test.
func apiSpec(id string) *taskdv1.TaskSpec {
	return &taskdv1.TaskSpec{
		Identity: id,
		Kind:     "noop",
		Scope:    taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{apiOnce()},
	}
}

// apiWantCode fails unless err is a status with code and, when field is not
// empty, a message naming field (as "field:").
func apiWantCode(t *testing.T, err error, code codes.Code, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got OK, want %s naming %q", code, field)
	}
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("error %v is not a gRPC status", err)
	}
	if st.Code() != code {
		t.Fatalf("got %s (%q), want %s naming %q", st.Code(), st.Message(), code, field)
	}
	if field != "" && !strings.Contains(st.Message(), field+":") {
		t.Fatalf("message %q does not name the field %q", st.Message(), field)
	}
}

// apiListAll returns every task of id, a page of 1000 at a time.
func apiListAll(ctx context.Context, t *testing.T, c taskdv1.TaskServiceClient, id string) []*taskdv1.Task {
	t.Helper()
	var out []*taskdv1.Task
	token := ""
	for {
		resp, err := c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: id, PageSize: 1000, PageToken: token})
		if err != nil {
			t.Fatalf("ListTasks(%q): %v", id, err)
		}
		out = append(out, resp.Tasks...)
		if resp.NextPageToken == "" {
			return out
		}
		token = resp.NextPageToken
	}
}

// apiWantNothing fails unless id has no task and no mapping.
func apiWantNothing(ctx context.Context, t *testing.T, c taskdv1.TaskServiceClient, id string) {
	t.Helper()
	if tasks := apiListAll(ctx, t, c, id); len(tasks) != 0 {
		t.Errorf("identity %q: %d tasks were stored by rejected requests, e.g. %v", id, len(tasks), tasks[0])
	}
	_, err := c.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: id})
	if status.Code(err) != codes.NotFound {
		t.Errorf("GetIdentity(%q) after rejected requests: got %v, want NotFound (nothing half-written)", id, err)
	}
}

// apiSwapCodec is the proto codec with one twist: in the marshalled request
// it replaces the bytes from by to (same length, so length prefixes stay
// right). It sends what the generated client refuses to marshal: a proto3
// string that is not valid UTF-8.
type apiSwapCodec struct{ from, to []byte }

func (c apiSwapCodec) Marshal(v any) ([]byte, error) {
	b, err := proto.Marshal(v.(proto.Message))
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(b, c.from) {
		return nil, fmt.Errorf("marker %q not in the request", c.from)
	}
	return bytes.ReplaceAll(b, c.from, c.to), nil
}

func (apiSwapCodec) Unmarshal(data []byte, v any) error {
	return proto.Unmarshal(data, v.(proto.Message))
}
func (apiSwapCodec) Name() string { return "proto" }

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

		_, err = node.Schedule(ctx, []*taskdv1.TaskSpec{apiSpec(bad)}, "task")
		var ia *taskservice.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != "task.identity" {
			t.Fatalf("Node.Schedule with an identity that is not UTF-8: got %v, want an InvalidArgumentError on task.identity", err)
		}

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

func TestScheduleTasksBatch(t *testing.T) {
	node := apiStart(t)
	c := node.Client
	ctx := apiCtx(t)

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

func TestOtherCallsValidate(t *testing.T) {
	node := apiStart(t)
	c := node.Client
	ctx := apiCtx(t)

	// A real task, so that "exists" and "does not exist" differ only in id.
	sched, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: apiSpec("carol")})
	if err != nil {
		t.Fatalf("ScheduleTask: %v", err)
	}
	realID := sched.Task.Id
	missing := pending.NewIDSource().New()
	if !pending.ValidTaskID(missing) || missing == realID {
		t.Fatalf("bad test id %q", missing)
	}

	type call func(id, taskID string) error
	calls := map[string]call{
		"GetTask": func(id, taskID string) error {
			_, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: id, TaskId: taskID})
			return err
		},
		"CancelTask": func(id, taskID string) error {
			_, err := c.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: id, TaskId: taskID})
			return err
		},
		"RunTaskNow": func(id, taskID string) error {
			_, err := c.RunTaskNow(ctx, &taskdv1.RunTaskNowRequest{Identity: id, TaskId: taskID})
			return err
		},
		"ListRuns": func(id, taskID string) error {
			_, err := c.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: id, TaskId: taskID})
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			apiWantCode(t, call("", realID), codes.InvalidArgument, "identity")
			apiWantCode(t, call(strings.Repeat("x", 257), realID), codes.InvalidArgument, "identity")
			apiWantCode(t, call("ctl\x01", realID), codes.InvalidArgument, "identity")
			for _, bad := range []string{"", "nope", realID + "0", "0123456789ABCDEFGHJKMNPQRS", "8" + realID[1:], realID[:25] + "u"} {
				apiWantCode(t, call("carol", bad), codes.InvalidArgument, "task_id")
			}
			apiWantCode(t, call("carol", missing), codes.NotFound, "")
			// The task exists, but not under this identity.
			apiWantCode(t, call("dave", realID), codes.NotFound, "")
		})
	}
	// Nothing above touched the real task.
	got, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: "carol", TaskId: realID})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if got.Task.State != taskdv1.TaskState_TASK_STATE_SCHEDULED || got.Task.Revision != sched.Task.Revision {
		t.Fatalf("the task changed: %v", got.Task)
	}

	for _, size := range []int32{-1, 1001} {
		_, err := c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "carol", PageSize: size})
		apiWantCode(t, err, codes.InvalidArgument, "page_size")
	}
	for _, size := range []int32{0, 1, 1000} {
		resp, err := c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "carol", PageSize: size})
		if err != nil || len(resp.Tasks) != 1 {
			t.Fatalf("ListTasks page_size %d: %v, %v", size, resp, err)
		}
	}
	for _, tok := range []string{"garbage", "not a token", realID + "x"} {
		_, err := c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "carol", PageToken: tok})
		apiWantCode(t, err, codes.InvalidArgument, "page_token")
	}
	// (An empty identity lists the whole cluster: list_test.go.)
	_, err = c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "bad\x01identity"})
	apiWantCode(t, err, codes.InvalidArgument, "identity")

	_, err = c.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: "never-used"})
	apiWantCode(t, err, codes.NotFound, "")
	_, err = c.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: ""})
	apiWantCode(t, err, codes.InvalidArgument, "identity")
	// The lookups wrote nothing either.
	apiWantNothing(ctx, t, c, "dave")
}

func TestListTasksPaging(t *testing.T) {
	node := apiStart(t)
	c := node.Client
	ctx := apiCtx(t)

	const n = 25
	var want []string
	for i := range n {
		s := apiSpec("pager")
		s.Payload = []byte(fmt.Sprint(i))
		resp, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
		if err != nil {
			t.Fatalf("ScheduleTask %d: %v", i, err)
		}
		want = append(want, resp.Task.Id)
	}
	// Another identity's tasks must not leak into the pages.
	if _, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: apiSpec("pager2")}); err != nil {
		t.Fatalf("ScheduleTask: %v", err)
	}

	var got []string
	seen := map[string]bool{}
	token := ""
	pages := 0
	for {
		resp, err := c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "pager", PageSize: 10, PageToken: token})
		if err != nil {
			t.Fatalf("ListTasks page %d: %v", pages+1, err)
		}
		pages++
		if pages > 3 {
			t.Fatalf("more than 3 pages of 10 for %d tasks", n)
		}
		wantLen := 10
		if pages == 3 {
			wantLen = 5
		}
		if len(resp.Tasks) != wantLen {
			t.Fatalf("page %d has %d tasks, want %d", pages, len(resp.Tasks), wantLen)
		}
		for _, task := range resp.Tasks {
			if seen[task.Id] {
				t.Fatalf("task %s listed twice", task.Id)
			}
			seen[task.Id] = true
			if task.Spec.GetIdentity() != "pager" {
				t.Fatalf("task %s of %q listed for pager", task.Id, task.Spec.GetIdentity())
			}
			got = append(got, task.Id)
		}
		if resp.NextPageToken == "" {
			break
		}
		token = resp.NextPageToken
	}
	if pages != 3 {
		t.Fatalf("%d pages, want 3 (the last page has an empty next_page_token)", pages)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("listed\n%v\nwant creation order\n%v", got, want)
	}
	for i := 1; i < len(got); i++ {
		if got[i-1] >= got[i] {
			t.Fatalf("ids not increasing: %s then %s", got[i-1], got[i])
		}
	}

	// A page that ends exactly at the last task says there is no more.
	resp, err := c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "pager", PageSize: n})
	if err != nil || len(resp.Tasks) != n || resp.NextPageToken != "" {
		t.Fatalf("one page of %d: %d tasks, token %q, err %v", n, len(resp.GetTasks()), resp.GetNextPageToken(), err)
	}
}

func TestIdempotencyKey(t *testing.T) {
	node := apiStart(t)
	c := node.Client
	ctx := apiCtx(t)

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

func TestCancelAndRunNowStates(t *testing.T) {
	node := apiStart(t)
	c := node.Client
	ctx := apiCtx(t)

	// Cancel.
	s := apiSpec("grace")
	s.Triggers = []*taskdv1.Trigger{apiPeriodic(time.Hour)}
	r, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
	if err != nil {
		t.Fatalf("ScheduleTask: %v", err)
	}
	id := r.Task.Id
	c1, err := c.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "grace", TaskId: id})
	if err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	if c1.Task.State != taskdv1.TaskState_TASK_STATE_CANCELED || c1.Task.FinishedAt == nil || c1.Task.NextFireTime != nil {
		t.Fatalf("cancelled task: state %s, finished_at %v, next_fire_time %v", c1.Task.State, c1.Task.FinishedAt, c1.Task.NextFireTime)
	}
	c2, err := c.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "grace", TaskId: id})
	if err != nil {
		t.Fatalf("second CancelTask: %v", err)
	}
	if !proto.Equal(c1.Task, c2.Task) {
		t.Fatalf("a second cancel changed the task:\n%v\nthen\n%v", c1.Task, c2.Task)
	}
	_, err = c.RunTaskNow(ctx, &taskdv1.RunTaskNowRequest{Identity: "grace", TaskId: id})
	apiWantCode(t, err, codes.FailedPrecondition, "")
	g, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: "grace", TaskId: id})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if !proto.Equal(g.Task, c1.Task) {
		t.Fatalf("the refused run-now changed the cancelled task:\n%v\nthen\n%v", c1.Task, g.Task)
	}
	if runs, err := c.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: "grace", TaskId: id}); err != nil || len(runs.Runs) != 0 {
		t.Fatalf("the cancelled task has runs %v (err %v)", runs.GetRuns(), err)
	}

	// Run now.
	s = apiSpec("grace")
	s.Triggers = []*taskdv1.Trigger{apiPeriodic(time.Hour)}
	r, err = c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
	if err != nil {
		t.Fatalf("ScheduleTask: %v", err)
	}
	id = r.Task.Id
	before, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: "grace", TaskId: id})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	nft := before.Task.NextFireTime
	if nft == nil || nft.AsTime().Before(time.Now().Add(50*time.Minute)) {
		t.Fatalf("a periodic task of 1h fires next at %v", nft)
	}
	if _, err := c.RunTaskNow(ctx, &taskdv1.RunTaskNowRequest{Identity: "grace", TaskId: id}); err != nil {
		t.Fatalf("RunTaskNow: %v", err)
	}
	var runs []*taskdv1.Run
	taskservicetest.Eventually(t, 20*time.Second, func() bool {
		resp, err := c.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: "grace", TaskId: id})
		if err != nil {
			t.Fatalf("ListRuns: %v", err)
		}
		runs = resp.Runs
		return len(runs) > 0
	}, "a run of the task after RunTaskNow")
	if len(runs) != 1 {
		t.Fatalf("%d runs after one RunTaskNow: %v", len(runs), runs)
	}
	run := runs[0]
	if !run.Manual || run.Outcome != taskdv1.Outcome_OUTCOME_SUCCESS || run.RunNumber != 1 || run.Node != "n1" || run.TaskId != id {
		t.Fatalf("the run: %v", run)
	}
	after, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: "grace", TaskId: id})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if !proto.Equal(after.Task.NextFireTime, nft) {
		t.Fatalf("next_fire_time moved from %v to %v after a manual run", nft.AsTime(), after.Task.NextFireTime.AsTime())
	}
	if after.Task.State != taskdv1.TaskState_TASK_STATE_SCHEDULED || after.Task.RunCount != 1 ||
		after.Task.LastRun.GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Fatalf("after the manual run: state %s, run_count %d, last_run %v", after.Task.State, after.Task.RunCount, after.Task.LastRun)
	}
	// The history is committed with the record: still exactly one run.
	resp, err := c.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: "grace", TaskId: id})
	if err != nil || len(resp.Runs) != 1 {
		t.Fatalf("runs after the manual run: %v (err %v)", resp.GetRuns(), err)
	}
}

func TestGetIdentityAndListNodes(t *testing.T) {
	node := apiStart(t)
	c := node.Client
	ctx := apiCtx(t)

	const n = 3
	for range n {
		if _, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: apiSpec("alice")}); err != nil {
			t.Fatalf("ScheduleTask: %v", err)
		}
	}
	gi, err := c.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: "alice"})
	if err != nil {
		t.Fatalf("GetIdentity: %v", err)
	}
	id := gi.Identity
	if id.GetIdentity() != "alice" || !id.Mapped || id.Node != "n1" || id.Epoch <= 0 || id.TaskCount != n {
		t.Fatalf("GetIdentity(alice) = %v; want mapped to n1 with an epoch and %d tasks", id, n)
	}

	ln, err := c.ListNodes(ctx, &taskdv1.ListNodesRequest{})
	if err != nil {
		t.Fatalf("ListNodes: %v", err)
	}
	if len(ln.Nodes) != 1 {
		t.Fatalf("ListNodes = %v, want n1 only", ln.Nodes)
	}
	nd := ln.Nodes[0]
	switch {
	case nd.Name != "n1":
		t.Fatalf("node name %q", nd.Name)
	case nd.State != taskdv1.NodeState_NODE_STATE_RUNNING:
		t.Fatalf("node state %s", nd.State)
	case nd.Address != node.Addr:
		t.Fatalf("node address %q, want %q", nd.Address, node.Addr)
	case nd.Incarnation == "" || nd.Incarnation != node.Incarnation():
		t.Fatalf("node incarnation %q, want %q", nd.Incarnation, node.Incarnation())
	case nd.StartedAt == nil:
		t.Fatal("node started_at unset")
	case nd.DispatchStart == nil || nd.DispatchStart.AsTime().IsZero():
		t.Fatal("node dispatch_start unset while RUNNING")
	case nd.DispatchStart.AsTime().Before(nd.StartedAt.AsTime()):
		t.Fatalf("dispatch_start %v before started_at %v", nd.DispatchStart.AsTime(), nd.StartedAt.AsTime())
	case !nd.DispatchStart.AsTime().Equal(node.DispatchStart()):
		t.Fatalf("dispatch_start %v, the node says %v", nd.DispatchStart.AsTime(), node.DispatchStart())
	case nd.IdentitiesOwned < 1:
		t.Fatalf("identities_owned %d, want at least 1 (alice)", nd.IdentitiesOwned)
	case len(nd.Kinds) != 1 || nd.Kinds[0] != "noop":
		t.Fatalf("kinds %v, want [noop]", nd.Kinds)
	}
}

func TestIdentityKeysDoNotCollide(t *testing.T) {
	node := apiStart(t)
	c := node.Client
	ctx := apiCtx(t)

	ids := []string{"bob", "bob.x", "bob/x", "bob%2Fx", "bob%252Fx", "bo", "bob/"}
	taskOf := map[string]string{}
	for _, id := range ids {
		r, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: apiSpec(id)})
		if err != nil {
			t.Fatalf("ScheduleTask(%q): %v", id, err)
		}
		taskOf[id] = r.Task.Id
	}
	for _, id := range ids {
		tasks := apiListAll(ctx, t, c, id)
		if len(tasks) != 1 || tasks[0].Id != taskOf[id] || tasks[0].Spec.GetIdentity() != id {
			var got []string
			for _, task := range tasks {
				got = append(got, fmt.Sprintf("%s(%q)", task.Id, task.Spec.GetIdentity()))
			}
			t.Errorf("ListTasks(%q) = %v, want only %s", id, got, taskOf[id])
		}
		gi, err := c.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: id})
		if err != nil {
			t.Errorf("GetIdentity(%q): %v", id, err)
			continue
		}
		if gi.Identity.TaskCount != 1 || gi.Identity.Identity != id || !gi.Identity.Mapped {
			t.Errorf("GetIdentity(%q) = %v, want mapped with 1 task", id, gi.Identity)
		}
		for _, other := range ids {
			if other == id {
				continue
			}
			if _, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: id, TaskId: taskOf[other]}); status.Code(err) != codes.NotFound {
				t.Errorf("GetTask(%q, task of %q): got %v, want NotFound", id, other, err)
			}
		}
	}
}

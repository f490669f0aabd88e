package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/calendar"
	"github.com/taskd/taskd/pkg/cron"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file sends bad input through the API of a real taskd process
// (docs/limits.md): sizes at each limit and one past it, odd UTF-8, deep
// calendar chains, huge label maps, bad page tokens, filters and cursors.
// Each refusal is checked for its code and the field it names, and then
// etcd is read directly: nothing any refused request named was written.

// limitsMaxPayload is the node's --max-payload: the largest allowed, so
// that the encoded task limit (MaxTaskBytes) can be reached.
const limitsMaxPayload = 1 << 20

// badInput is one row: a call and what it must answer.
type badInput struct {
	name string
	call func(ctx context.Context, c taskdv1.TaskServiceClient) error
	code codes.Code
	// field is named in the message as "field:". For INTERNAL it is text
	// the message contains: a string that is not UTF-8 is refused by
	// grpc-go's decoder before taskd sees the request, and the decoder does
	// not say which field it was.
	field string
}

// swapCodec marshals a request as proto and then replaces the bytes from by
// to (same length): it sends what the generated client refuses to
// marshal, a string that is not UTF-8.
type swapCodec struct{ from, to []byte }

func (c swapCodec) Marshal(v any) ([]byte, error) {
	b, err := proto.Marshal(v.(proto.Message))
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(b, c.from) {
		return nil, fmt.Errorf("marker %q not in the request", c.from)
	}
	return bytes.ReplaceAll(b, c.from, c.to), nil
}
func (swapCodec) Unmarshal(data []byte, v any) error { return proto.Unmarshal(data, v.(proto.Message)) }
func (swapCodec) Name() string                       { return "proto" }

func limitSpec(id string) *taskdv1.TaskSpec {
	return &taskdv1.TaskSpec{Identity: id, Kind: "noop", Scope: taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{Delay: durationpb.New(time.Hour)}}}}}
}

func cronTrigger(expr, zone string) *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: expr, TimeZone: zone}}}
}

func onceAt(t time.Time) *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: timestamppb.New(t)}}}
}

func weekly(name string) *taskdv1.Calendar {
	return &taskdv1.Calendar{Name: name, Kind: &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: []string{"SUN"}}}}
}

// scheduleBad is a row calling ScheduleTask with spec changed by mut.
func scheduleBad(name, field string, mut func(s *taskdv1.TaskSpec)) badInput {
	return badInput{name: name, code: codes.InvalidArgument, field: field,
		call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
			s := limitSpec("bad-" + strings.ReplaceAll(name, " ", "-"))
			mut(s)
			_, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
			return err
		}}
}

func labels(n, keyLen, valueLen int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		k := fmt.Sprintf("%0*d", keyLen, i)
		m[k] = strings.Repeat("v", valueLen)
	}
	return m
}

// badInputs are the rows refused without writing anything.
func badInputs() []badInput {
	far := taskservice.MaxInstant
	utf8Row := func(name, field string, bad string, build func(marker string) proto.Message, call func(ctx context.Context, c taskdv1.TaskServiceClient, m proto.Message, opt grpc.CallOption) error) badInput {
		marker := strings.Repeat("M", len(bad))
		return badInput{name: name, code: codes.Internal, field: field,
			call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
				return call(ctx, c, build(marker), grpc.ForceCodec(swapCodec{from: []byte(marker), to: []byte(bad)}))
			}}
	}
	scheduleRaw := func(ctx context.Context, c taskdv1.TaskServiceClient, m proto.Message, opt grpc.CallOption) error {
		_, err := c.ScheduleTask(ctx, m.(*taskdv1.ScheduleTaskRequest), opt)
		return err
	}
	rows := []badInput{
		// Identity.
		scheduleBad("identity of 257 bytes", "task.identity", func(s *taskdv1.TaskSpec) { s.Identity = strings.Repeat("x", identity.MaxLen+1) }),
		scheduleBad("identity with NUL", "task.identity", func(s *taskdv1.TaskSpec) { s.Identity = "nul\x00id" }),
		scheduleBad("identity with a C1 control", "task.identity", func(s *taskdv1.TaskSpec) { s.Identity = "c1\u0085id" }),
		scheduleBad("identity with a bidi override", "task.identity", func(s *taskdv1.TaskSpec) { s.Identity = "admin\u202egpj.exe" }),
		scheduleBad("identity with a bidi isolate", "task.identity", func(s *taskdv1.TaskSpec) { s.Identity = "iso\u2067late" }),
		utf8Row("identity not UTF-8 (lone continuation byte)", "invalid UTF-8", "ab\x80cd",
			func(m string) proto.Message { return &taskdv1.ScheduleTaskRequest{Task: limitSpec(m)} }, scheduleRaw),
		utf8Row("identity as an overlong encoding of '/'", "invalid UTF-8", "x\xc0\xafy",
			func(m string) proto.Message { return &taskdv1.ScheduleTaskRequest{Task: limitSpec(m)} }, scheduleRaw),
		utf8Row("identity as an encoded surrogate", "invalid UTF-8", "s\xed\xa0\x80s",
			func(m string) proto.Message { return &taskdv1.ScheduleTaskRequest{Task: limitSpec(m)} }, scheduleRaw),
		// Kind.
		scheduleBad("kind of 129 bytes", "task.kind", func(s *taskdv1.TaskSpec) { s.Kind = strings.Repeat("k", taskservice.MaxKindLen+1) }),
		scheduleBad("kind with a control character", "task.kind", func(s *taskdv1.TaskSpec) { s.Kind = "no\x1bop" }),
		scheduleBad("kind with a bidi mark", "task.kind", func(s *taskdv1.TaskSpec) { s.Kind = "noop\u200f" }),
		// Payload, data, encoded size.
		scheduleBad("payload one past --max-payload", "task.payload", func(s *taskdv1.TaskSpec) { s.Payload = make([]byte, limitsMaxPayload+1) }),
		scheduleBad("data one past --max-payload", "task.data", func(s *taskdv1.TaskSpec) { s.Data = make([]byte, limitsMaxPayload+1) }),
		scheduleBad("payload and data at the limit, task too large encoded", "task", func(s *taskdv1.TaskSpec) {
			s.Payload, s.Data = make([]byte, limitsMaxPayload), make([]byte, limitsMaxPayload)
		}),
		// Triggers.
		scheduleBad("17 triggers", "task.triggers", func(s *taskdv1.TaskSpec) {
			for range taskservice.MaxTriggers {
				s.Triggers = append(s.Triggers, s.Triggers[0])
			}
		}),
		scheduleBad("trigger name of 65 bytes", "task.triggers[0].name", func(s *taskdv1.TaskSpec) { s.Triggers[0].Name = strings.Repeat("n", taskservice.MaxTriggerNameLen+1) }),
		scheduleBad("trigger name with NUL", "task.triggers[0].name", func(s *taskdv1.TaskSpec) { s.Triggers[0].Name = "a\x00b" }),
		scheduleBad("cron expression one past the limit", "task.triggers[0].cron.expression", func(s *taskdv1.TaskSpec) {
			s.Triggers = []*taskdv1.Trigger{cronTrigger("0 0 12 * * ?"+strings.Repeat(" ", cron.MaxLen-11), "")}
		}),
		scheduleBad("cron expression of 1.5 MB (issue 20)", "task.triggers[0].cron.expression", func(s *taskdv1.TaskSpec) {
			s.Triggers = []*taskdv1.Trigger{cronTrigger("0 0 0 "+strings.Repeat("1,", 750_000)+"1 * ?", "")}
		}),
		scheduleBad("cron time zone of 65 bytes", "task.triggers[0].cron.time_zone", func(s *taskdv1.TaskSpec) {
			s.Triggers = []*taskdv1.Trigger{cronTrigger("0 0 12 * * ?", "Europe/"+strings.Repeat("B", cron.MaxZoneLen-6))}
		}),
		scheduleBad("once at the end of the instant range", "task.triggers[0].once.at", func(s *taskdv1.TaskSpec) { s.Triggers = []*taskdv1.Trigger{onceAt(far)} }),
		scheduleBad("once in year 9999", "task.triggers[0].once.at", func(s *taskdv1.TaskSpec) {
			s.Triggers = []*taskdv1.Trigger{onceAt(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))}
		}),
		scheduleBad("once before 1970", "task.triggers[0].once.at", func(s *taskdv1.TaskSpec) {
			s.Triggers = []*taskdv1.Trigger{onceAt(taskservice.MinInstant.Add(-time.Second))}
		}),
		scheduleBad("periodic starting in year 1", "task.triggers[0].periodic.start", func(s *taskdv1.TaskSpec) {
			s.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
				Interval: durationpb.New(time.Millisecond), Start: timestamppb.New(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))}}}}
		}),
		scheduleBad("cron ending past the range", "task.triggers[0].cron.end", func(s *taskdv1.TaskSpec) {
			tr := cronTrigger("0 0 12 * * ?", "")
			tr.GetCron().End = timestamppb.New(far.Add(time.Hour))
			s.Triggers = []*taskdv1.Trigger{tr}
		}),
		scheduleBad("delay of 101 years", "task.triggers[0].once.delay", func(s *taskdv1.TaskSpec) {
			s.Triggers[0].GetOnce().Delay = durationpb.New(101 * 365 * 24 * time.Hour)
		}),
		// Labels.
		scheduleBad("65 labels", "task.labels", func(s *taskdv1.TaskSpec) { s.Labels = labels(taskservice.MaxLabels+1, 3, 1) }),
		scheduleBad("10,000 labels", "task.labels", func(s *taskdv1.TaskSpec) { s.Labels = labels(10_000, 5, 1) }),
		scheduleBad("label key of 129 bytes", "task.labels", func(s *taskdv1.TaskSpec) { s.Labels = labels(1, taskservice.MaxLabelKeyLen+1, 1) }),
		scheduleBad("label key with a bidi override", "task.labels", func(s *taskdv1.TaskSpec) { s.Labels = map[string]string{"team\u202e": "x"} }),
		scheduleBad("label value of 1025 bytes", "task.labels[0]", func(s *taskdv1.TaskSpec) { s.Labels = labels(1, 1, taskservice.MaxLabelValueLen+1) }),
		// Idempotency key, calendars.
		scheduleBad("idempotency key of 257 bytes", "task.idempotency_key", func(s *taskdv1.TaskSpec) {
			s.IdempotencyKey = strings.Repeat("i", taskservice.MaxIdempotencyKeyLen+1)
		}),
		scheduleBad("idempotency key with a newline", "task.idempotency_key", func(s *taskdv1.TaskSpec) { s.IdempotencyKey = "key\n2" }),
		scheduleBad("17 calendars", "task.calendars", func(s *taskdv1.TaskSpec) {
			for i := range taskservice.MaxCalendarsPerTask + 1 {
				s.Calendars = append(s.Calendars, fmt.Sprintf("c%d", i))
			}
		}),
		scheduleBad("calendar name of 1 MB", "task.calendars[0]", func(s *taskdv1.TaskSpec) { s.Calendars = []string{strings.Repeat("c", 1<<20)} }),
		{name: "101 tasks in one batch", code: codes.InvalidArgument, field: "tasks",
			call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
				var tasks []*taskdv1.TaskSpec
				for range taskservice.MaxBatch + 1 {
					tasks = append(tasks, limitSpec("bad-batch"))
				}
				_, err := c.ScheduleTasks(ctx, &taskdv1.ScheduleTasksRequest{Tasks: tasks})
				return err
			}},
		// ListTasks.
		listBad("page size 1001", "page_size", &taskdv1.ListTasksRequest{PageSize: 1001}),
		listBad("page token of 2049 bytes", "page_token", &taskdv1.ListTasksRequest{PageToken: strings.Repeat("A", taskservice.MaxPageTokenLen+1)}),
		listBad("page token of 1 MB", "page_token", &taskdv1.ListTasksRequest{PageToken: strings.Repeat("A", 1<<20)}),
		listBad("page token not base64", "page_token", &taskdv1.ListTasksRequest{PageToken: "!!not base64!!"}),
		listBad("page token of another prefix", "page_token", &taskdv1.ListTasksRequest{PageToken: "L2V0Yy9wYXNzd2Q"}),
		listBad("page token of one identity, not a task id", "page_token", &taskdv1.ListTasksRequest{Identity: "x", PageToken: "../../x"}),
		listBad("kind filter of 129 bytes", "kind", &taskdv1.ListTasksRequest{Kind: strings.Repeat("k", taskservice.MaxKindLen+1)}),
		listBad("label filter of 65 labels", "labels", &taskdv1.ListTasksRequest{Labels: labels(taskservice.MaxLabels+1, 3, 1)}),
		listBad("label filter value of 1025 bytes", "labels[0]", &taskdv1.ListTasksRequest{Labels: labels(1, 1, taskservice.MaxLabelValueLen+1)}),
		listBad("node filter with a slash", "node", &taskdv1.ListTasksRequest{Node: "n1/../n2"}),
		listBad("unknown state", "states[0]", &taskdv1.ListTasksRequest{States: []taskdv1.TaskState{99}}),
		listBad("state listed twice", "states[1]", &taskdv1.ListTasksRequest{States: []taskdv1.TaskState{1, 1}}),
		listBad("a million states", "states", &taskdv1.ListTasksRequest{States: make([]taskdv1.TaskState, 1_000_000)}),
		// WatchEvents.
		watchBad("cursor of 65 bytes", "cursor", &taskdv1.WatchEventsRequest{Cursor: strings.Repeat("9", taskservice.MaxCursorLen+1)}),
		watchBad("cursor not a cursor", "cursor", &taskdv1.WatchEventsRequest{Cursor: "12.x"}),
		watchBad("event type listed twice", "types[1]", &taskdv1.WatchEventsRequest{Types: []taskdv1.EventType{2, 2}}),
		watchBad("kind filter with a control character", "kind", &taskdv1.WatchEventsRequest{Kind: "a\x7fb"}),
		watchBad("node filter of 65 bytes", "node", &taskdv1.WatchEventsRequest{Node: strings.Repeat("n", taskservice.MaxNodeNameLen+1)}),
		// PreviewTriggers.
		{name: "preview count 1001", code: codes.InvalidArgument, field: "count",
			call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
				_, err := c.PreviewTriggers(ctx, &taskdv1.PreviewTriggersRequest{Triggers: limitSpec("p").Triggers, Count: taskservice.MaxPreviewCount + 1})
				return err
			}},
		{name: "preview from past the range", code: codes.InvalidArgument, field: "from",
			call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
				_, err := c.PreviewTriggers(ctx, &taskdv1.PreviewTriggersRequest{Triggers: limitSpec("p").Triggers, From: timestamppb.New(far)})
				return err
			}},
		{name: "preview of a 1.5 MB cron expression", code: codes.InvalidArgument, field: "triggers[0].cron.expression",
			call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
				_, err := c.PreviewTriggers(ctx, &taskdv1.PreviewTriggersRequest{Triggers: []*taskdv1.Trigger{cronTrigger(strings.Repeat("1,", 750_000), "")}})
				return err
			}},
		// Calendars.
		calBad("calendar name of 129 bytes", "calendar.name", func(c *taskdv1.Calendar) { c.Name = strings.Repeat("c", calendar.MaxNameLen+1) }),
		calBad("calendar name with a slash", "calendar.name", func(c *taskdv1.Calendar) { c.Name = "../x" }),
		calBad("calendar description of 1025 bytes", "calendar.description", func(c *taskdv1.Calendar) {
			c.Description = strings.Repeat("d", calendar.MaxDescriptionLen+1)
		}),
		calBad("calendar time zone of 65 bytes", "calendar.time_zone", func(c *taskdv1.Calendar) { c.TimeZone = strings.Repeat("Z", cron.MaxZoneLen+1) }),
		calBad("calendar cron rule of 1.5 MB", "calendar.cron.expression", func(c *taskdv1.Calendar) {
			c.Kind = &taskdv1.Calendar_Cron{Cron: &taskdv1.CronCalendar{Expression: "* * * " + strings.Repeat("1,", 750_000) + "1 * ?"}}
		}),
		calBad("calendar of 1001 dates", "calendar.dates.dates", func(c *taskdv1.Calendar) {
			var ds []*taskdv1.Date
			for i := range calendar.MaxEntries + 1 {
				ds = append(ds, &taskdv1.Date{Year: int32(2000 + i/365), Month: 1, Day: 1})
			}
			c.Kind = &taskdv1.Calendar_Dates{Dates: &taskdv1.DatesCalendar{Dates: ds}}
		}),
		calBad("calendar based on a missing one", "calendar.base", func(c *taskdv1.Calendar) { c.Base = "nowhere" }),
		{name: "GetCalendar name of 1 MB", code: codes.InvalidArgument, field: "name",
			call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
				_, err := c.GetCalendar(ctx, &taskdv1.GetCalendarRequest{Name: strings.Repeat("c", 1<<20)})
				return err
			}},
		{name: "DeleteCalendar name with a slash", code: codes.InvalidArgument, field: "name",
			call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
				_, err := c.DeleteCalendar(ctx, &taskdv1.DeleteCalendarRequest{Name: "cal/../x"})
				return err
			}},
		// Pauses, moves, drains.
		{name: "PauseIdentity identity of 257 bytes", code: codes.InvalidArgument, field: "identity",
			call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
				_, err := c.PauseIdentity(ctx, &taskdv1.PauseIdentityRequest{Identity: strings.Repeat("p", identity.MaxLen+1)})
				return err
			}},
		{name: "PauseKind kind with a bidi override", code: codes.InvalidArgument, field: "kind",
			call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
				_, err := c.PauseKind(ctx, &taskdv1.PauseKindRequest{Kind: "noop\u202e"})
				return err
			}},
		{name: "MoveIdentity to a node name of 65 bytes", code: codes.InvalidArgument, field: "to_node",
			call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
				_, err := c.MoveIdentity(ctx, &taskdv1.MoveIdentityRequest{Identity: "m", ToNode: strings.Repeat("n", taskservice.MaxNodeNameLen+1)})
				return err
			}},
		{name: "DrainNode node name with a space", code: codes.InvalidArgument, field: "node",
			call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
				_, err := c.DrainNode(ctx, &taskdv1.DrainNodeRequest{Node: "a b"})
				return err
			}},
	}
	return rows
}

func listBad(name, field string, req *taskdv1.ListTasksRequest) badInput {
	return badInput{name: name, code: codes.InvalidArgument, field: field,
		call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
			_, err := c.ListTasks(ctx, req)
			return err
		}}
}

func watchBad(name, field string, req *taskdv1.WatchEventsRequest) badInput {
	return badInput{name: name, code: codes.InvalidArgument, field: field,
		call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
			stream, err := c.WatchEvents(ctx, req)
			if err != nil {
				return err
			}
			_, err = stream.Recv()
			return err
		}}
}

func calBad(name, field string, mut func(c *taskdv1.Calendar)) badInput {
	return badInput{name: name, code: codes.InvalidArgument, field: field,
		call: func(ctx context.Context, c taskdv1.TaskServiceClient) error {
			cl := weekly("bad-cal")
			mut(cl)
			_, err := c.CreateCalendar(ctx, &taskdv1.CreateCalendarRequest{Calendar: cl})
			return err
		}}
}

// wantRefused fails unless err has code and names field.
func wantRefused(t *testing.T, err error, code codes.Code, field string) {
	t.Helper()
	st := status.Convert(err)
	if err == nil || st.Code() != code {
		t.Fatalf("got %v (%.200q), want %s naming %q", st.Code(), st.Message(), code, field)
	}
	want := field + ":"
	if code == codes.Internal {
		want = field // "grpc: failed to unmarshal the received message: string field contains invalid UTF-8"
	}
	if !strings.Contains(st.Message(), want) {
		t.Fatalf("message %.300q does not name %q", st.Message(), want)
	}
	if len(st.Message()) > 4<<10 {
		t.Fatalf("message is %d bytes: it quotes the bad input back", len(st.Message()))
	}
}

// storedKeys counts the keys under prefix of the kinds a request writes.
func storedKeys(t *testing.T, cli *clientv3.Client, prefix string) map[string]int {
	t.Helper()
	ctx, cancel := rpcCtx()
	defer cancel()
	out := map[string]int{}
	for _, kind := range []string{"task/", "every/", "idem/", "runs/", "map/", "owned/", "handoff/", "cal/", "calref/", "pause/", "control/", "token/"} {
		resp, err := cli.Get(ctx, prefix+kind, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatalf("count %s%s: %v", prefix, kind, err)
		}
		if resp.Count > 0 {
			out[kind] = int(resp.Count)
		}
	}
	return out
}

func TestBadInputs(t *testing.T) {
	c := newCluster(t, "/limits/")
	opts := c.opts("n1", "--exec", "noop=true", "--max-payload", fmt.Sprint(limitsMaxPayload))
	node := startNode(t, opts)
	api := node.Client()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.etcd.URL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })

	rows := badInputs()
	if len(rows) < 40 {
		t.Fatalf("only %d rows", len(rows))
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			ctx, cancel := rpcCtx()
			defer cancel()
			wantRefused(t, row.call(ctx, api), row.code, row.field)
		})
	}
	if got := storedKeys(t, cli, c.prefix); len(got) != 0 {
		t.Fatalf("refused requests wrote keys: %v", got)
	}

	// The limits themselves are accepted.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	at := limitSpec(strings.Repeat("e", identity.MaxLen))
	at.Payload = make([]byte, limitsMaxPayload)
	at.Labels = labels(taskservice.MaxLabels, taskservice.MaxLabelKeyLen, taskservice.MaxLabelValueLen)
	at.IdempotencyKey = strings.Repeat("i", taskservice.MaxIdempotencyKeyLen)
	at.Triggers = nil
	for i := range taskservice.MaxTriggers {
		tr := cronTrigger("0 0 12 * * ?"+strings.Repeat(" ", cron.MaxLen-12), "America/Argentina/Buenos_Aires")
		tr.Name = fmt.Sprintf("%0*d", taskservice.MaxTriggerNameLen, i)
		at.Triggers = append(at.Triggers, tr)
	}
	resp, err := api.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: at})
	if err != nil {
		t.Fatalf("a task at every limit was refused: %.300v", err)
	}
	task := resp.GetTask()

	// A calendar chain of MaxChain is accepted; one more is not.
	for i := range calendar.MaxChain {
		cl := weekly(fmt.Sprintf("chain-%02d", i))
		if i > 0 {
			cl.Base = fmt.Sprintf("chain-%02d", i-1)
		}
		if _, err := api.CreateCalendar(ctx, &taskdv1.CreateCalendarRequest{Calendar: cl}); err != nil {
			t.Fatalf("calendar %d of a chain of %d: %v", i, calendar.MaxChain, err)
		}
	}
	deep := weekly("chain-too-deep")
	deep.Base = fmt.Sprintf("chain-%02d", calendar.MaxChain-1)
	_, err = api.CreateCalendar(ctx, &taskdv1.CreateCalendarRequest{Calendar: deep})
	wantRefused(t, err, codes.InvalidArgument, "calendar.base")
	if _, err := api.GetCalendar(ctx, &taskdv1.GetCalendarRequest{Name: deep.Name}); status.Code(err) != codes.NotFound {
		t.Fatalf("the refused calendar: GetCalendar gave %v, want NotFound", err)
	}

	// UpdateTask checks the spec as a schedule does; the task is unchanged.
	for _, u := range []struct {
		name, field string
		mut         func(s *taskdv1.TaskSpec)
	}{
		{"label value of 1025 bytes", "spec.labels[k]", func(s *taskdv1.TaskSpec) {
			s.Labels = map[string]string{"k": strings.Repeat("v", taskservice.MaxLabelValueLen+1)}
		}},
		{"data that makes the task too large", "spec", func(s *taskdv1.TaskSpec) { s.Data = make([]byte, limitsMaxPayload) }},
		{"cron expression past the limit", "spec.triggers[0].cron.expression", func(s *taskdv1.TaskSpec) {
			s.Triggers[0].GetCron().Expression += " "
		}},
	} {
		s := proto.Clone(task.GetSpec()).(*taskdv1.TaskSpec)
		u.mut(s)
		_, err := api.UpdateTask(ctx, &taskdv1.UpdateTaskRequest{Identity: task.GetSpec().GetIdentity(), TaskId: task.GetId(), Spec: s})
		t.Run("UpdateTask "+u.name, func(t *testing.T) { wantRefused(t, err, codes.InvalidArgument, u.field) })
	}
	// So do add_triggers and remove_triggers, against the task's triggers.
	long := strings.Repeat("n", taskservice.MaxTriggerNameLen+1)
	var seventeen []string
	for i := range taskservice.MaxTriggers + 1 {
		seventeen = append(seventeen, fmt.Sprint(i))
	}
	for _, e := range []struct {
		name, field string
		add         []*taskdv1.Trigger
		remove      []string
	}{
		{"a 17th trigger", "add_triggers", []*taskdv1.Trigger{cronTrigger("0 0 12 * * ?", "")}, nil},
		{"an added trigger name of 65 bytes", "add_triggers[0].name", []*taskdv1.Trigger{{Name: long, Kind: cronTrigger("0 0 12 * * ?", "").Kind}}, nil},
		{"an added trigger named by the server's form", "add_triggers[0].name", []*taskdv1.Trigger{{Name: "#3", Kind: cronTrigger("0 0 12 * * ?", "").Kind}}, []string{task.GetSpec().GetTriggers()[0].GetName()}},
		{"a name to remove of 65 bytes", "remove_triggers[0]", nil, []string{long}},
		{"17 names to remove", "remove_triggers", nil, seventeen},
		{"a name the task has no trigger of", "remove_triggers[0]", nil, []string{"nope"}},
	} {
		_, err := api.UpdateTask(ctx, &taskdv1.UpdateTaskRequest{Identity: task.GetSpec().GetIdentity(), TaskId: task.GetId(), AddTriggers: e.add, RemoveTriggers: e.remove})
		t.Run("UpdateTask "+e.name, func(t *testing.T) { wantRefused(t, err, codes.InvalidArgument, e.field) })
	}
	got, err := api.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: task.GetSpec().GetIdentity(), TaskId: task.GetId()})
	if err != nil || got.GetTask().GetRevision() != task.GetRevision() {
		t.Fatalf("after refused updates: %v, revision %d, want %d", err, got.GetTask().GetRevision(), task.GetRevision())
	}
}

// TestNonDurableCalendarRefEndsWithKilledNode: a non-durable task's
// reference to its calendar is under its node's lease, so a node killed
// with SIGKILL does not keep the calendar from being deleted for longer
// than its --lease-ttl (2 s here), while a live node's task does.
func TestNonDurableCalendarRefEndsWithKilledNode(t *testing.T) {
	c := newCluster(t, "/localref/")
	o1, o2 := c.opts("n1"), c.opts("n2", "--exec", "noop=true")
	n1 := startNode(t, o1)
	n2 := startNode(t, o2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := n1.Client().CreateCalendar(ctx, &taskdv1.CreateCalendarRequest{Calendar: weekly("weekends")}); err != nil {
		t.Fatal(err)
	}
	s := limitSpec("local")
	s.NonDurable, s.Calendars = true, []string{"weekends"}
	// n2 learns of the calendar through its watch.
	eventually(t, waitLong, "n2 to accept a non-durable task listing the calendar", func() error {
		_, err := n2.Client().ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
		return err
	})
	_, err := n1.Client().DeleteCalendar(ctx, &taskdv1.DeleteCalendarRequest{Name: "weekends"})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "on node n2") {
		t.Fatalf("DeleteCalendar while n2 holds a non-durable task listing it: %v, want FAILED_PRECONDITION", err)
	}
	n2.Kill()
	eventually(t, waitLong, "the calendar to be deletable once n2's lease expired", func() error {
		_, err := n1.Client().DeleteCalendar(ctx, &taskdv1.DeleteCalendarRequest{Name: "weekends"})
		return err
	})
}

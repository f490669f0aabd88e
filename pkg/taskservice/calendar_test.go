package taskservice_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func createCalendar(t *testing.T, n *tst.Node, c *taskdv1.Calendar, replace bool) (*taskdv1.Calendar, error) {
	t.Helper()
	ctx, cancel := rpc()
	defer cancel()
	resp, err := n.Client.CreateCalendar(ctx, &taskdv1.CreateCalendarRequest{Calendar: c, Replace: replace})
	return resp.GetCalendar(), err
}

func weekly(name string, days ...string) *taskdv1.Calendar {
	return &taskdv1.Calendar{Name: name, Kind: &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: days}}}
}

func cronTrigger(expr, zone string) *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: expr, TimeZone: zone}}}
}

// TestCalendarLifecycle: calendars are created, read, listed, replaced;
// bad ones are refused naming the field; one in use by a task or by
// another calendar cannot be deleted, and can once no longer used.
func TestCalendarLifecycle(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := rpc()
	defer cancel()
	c := h.node.Client
	if _, err := createCalendar(t, h.node, weekly("weekend", "SAT", "SUN"), false); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := createCalendar(t, h.node, weekly("weekend", "SUN"), false); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("create twice: %v, want ALREADY_EXISTS", err)
	}
	for _, bad := range []struct {
		cal   *taskdv1.Calendar
		field string
	}{
		{weekly("w2", "SAT", "FUNDAY"), "calendar.weekly.days[1]"},
		{&taskdv1.Calendar{Name: "nokind"}, "calendar"},
		{&taskdv1.Calendar{Name: "based", Base: "missing", Kind: &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: []string{"MON"}}}}, "calendar.base"},
		{&taskdv1.Calendar{Name: "d", Kind: &taskdv1.Calendar_Daily{Daily: &taskdv1.DailyCalendar{Start: "25:00", End: "26:00"}}}, "calendar.daily.start"},
		{&taskdv1.Calendar{Name: "z", TimeZone: "Nowhere/Land", Kind: &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: []string{"MON"}}}}, "calendar.time_zone"},
	} {
		if _, err := createCalendar(t, h.node, bad.cal, false); status.Code(err) != codes.InvalidArgument || !contains(err.Error(), bad.field) {
			t.Fatalf("create %v: %v, want INVALID_ARGUMENT naming %s", bad.cal, err, bad.field)
		}
	}
	holidays := &taskdv1.Calendar{Name: "holidays", Base: "weekend", TimeZone: "Europe/Berlin",
		Kind: &taskdv1.Calendar_Dates{Dates: &taskdv1.DatesCalendar{Dates: []*taskdv1.Date{{Year: 2026, Month: 12, Day: 25}}}}}
	if _, err := createCalendar(t, h.node, holidays, false); err != nil {
		t.Fatalf("create based calendar: %v", err)
	}
	// A cycle through a replace is refused.
	if _, err := createCalendar(t, h.node, &taskdv1.Calendar{Name: "weekend", Base: "holidays",
		Kind: &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: []string{"SAT"}}}}, true); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("replace making a cycle: %v, want INVALID_ARGUMENT", err)
	}
	list, err := c.ListCalendars(ctx, &taskdv1.ListCalendarsRequest{})
	if err != nil || len(list.Calendars) != 2 || list.Calendars[0].Name != "holidays" || list.Calendars[1].Name != "weekend" {
		t.Fatalf("list: %v %v", list, err)
	}
	task := h.schedule(&taskdv1.TaskSpec{Identity: "cal", Kind: "rec", Scope: taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{after(time.Hour)}, Calendars: []string{"holidays"}})
	// The message is the sentence alone: the code already says "failed
	// precondition", and a client printing both says it once.
	_, err = c.DeleteCalendar(ctx, &taskdv1.DeleteCalendarRequest{Name: "holidays"})
	if want := `calendar "holidays" is in use by task ` + task.Id + ` (and maybe others)`; status.Code(err) != codes.FailedPrecondition || status.Convert(err).Message() != want {
		t.Fatalf("delete a calendar a task uses: %v, want FAILED_PRECONDITION %q", err, want)
	}
	if _, err := c.DeleteCalendar(ctx, &taskdv1.DeleteCalendarRequest{Name: "weekend"}); status.Code(err) != codes.FailedPrecondition || !contains(err.Error(), "holidays") {
		t.Fatalf("delete a base calendar: %v, want FAILED_PRECONDITION naming holidays", err)
	}
	// The task stops listing it: it can go.
	if _, err := update(ctx, h.node, "cal", h.get("cal", task.Id), func(s *taskdv1.TaskSpec) { s.Calendars = nil }, 0); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"holidays", "weekend"} {
		if _, err := c.DeleteCalendar(ctx, &taskdv1.DeleteCalendarRequest{Name: name}); err != nil {
			t.Fatalf("delete %s: %v", name, err)
		}
	}
	if _, err := c.GetCalendar(ctx, &taskdv1.GetCalendarRequest{Name: "weekend"}); status.Code(err) != codes.NotFound {
		t.Fatalf("get deleted: %v, want NOT_FOUND", err)
	}
}

// TestCalendarExcludedFireTimesAreSkipped: a periodic task under a cron
// calendar that excludes even seconds runs only in odd seconds, and the
// excluded fire times are not misfires; a once task whose one fire time a
// dates calendar excludes completes without running.
func TestCalendarExcludedFireTimesAreSkipped(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := createCalendar(t, h.node, &taskdv1.Calendar{Name: "even",
		Kind: &taskdv1.Calendar_Cron{Cron: &taskdv1.CronCalendar{Expression: "*/2 * * * * ?"}}}, false); err != nil {
		t.Fatal(err)
	}
	iv := 250 * time.Millisecond
	s := spec("c", "rec", every(time.Now().Add(iv), iv, 0))
	s.Calendars = []string{"even"}
	task := h.schedule(s)
	tst.Eventually(t, 10*time.Second, func() bool { return len(h.rec.of(task.Id)) >= 6 }, "six runs")
	for _, r := range h.rec.of(task.Id) {
		if r.Fire.Unix()%2 == 0 {
			t.Fatalf("run for fire time %v, in an excluded even second", r.Fire)
		}
	}
	got := h.get("c", task.Id)
	if got.Misfires != 0 {
		t.Fatalf("excluded fire times counted as %d misfires", got.Misfires)
	}
	for _, f := range got.NextFireTimes {
		if f.AsTime().Unix()%2 == 0 {
			t.Fatalf("next fire times %v include an excluded one", got.NextFireTimes)
		}
	}

	at := time.Now().Add(200 * time.Millisecond).UTC()
	if _, err := createCalendar(t, h.node, &taskdv1.Calendar{Name: "today",
		Kind: &taskdv1.Calendar_Dates{Dates: &taskdv1.DatesCalendar{Dates: []*taskdv1.Date{
			{Year: int32(at.Year()), Month: int32(at.Month()), Day: int32(at.Day())}}}}}, false); err != nil {
		t.Fatal(err)
	}
	o := spec("c", "rec", once(at))
	o.Calendars = []string{"today"}
	one := h.schedule(o)
	h.waitState("c", one.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if n := len(h.rec.of(one.Id)); n != 0 {
		t.Fatalf("excluded once task ran %d times", n)
	}
}

// TestPreviewTriggers: the example, with and without a calendar,
// and refusals naming the field.
func TestPreviewTriggers(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := rpc()
	defer cancel()
	from := timestamppb.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) // a Tuesday
	preview := func(cals ...string) []string {
		resp, err := h.node.Client.PreviewTriggers(ctx, &taskdv1.PreviewTriggersRequest{
			Triggers: []*taskdv1.Trigger{cronTrigger("0 30 2 ? * MON-FRI", "Europe/Berlin")}, Calendars: cals, From: from, Count: 10})
		if err != nil {
			t.Fatalf("preview: %v", err)
		}
		var out []string
		for _, f := range resp.FireTimes {
			out = append(out, f.At.AsTime().Format("Jan 2 15:04Z07:00")+" "+f.Local)
		}
		return out
	}
	days := func(ds ...int) []string {
		var out []string
		for _, d := range ds {
			out = append(out, fmt.Sprintf("Dec %d 01:30Z 2026-12-%02dT02:30:00+01:00", d, d))
		}
		return out
	}
	if got, want := preview(), days(1, 2, 3, 4, 7, 8, 9, 10, 11, 14); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("preview:\n%v\nwant\n%v", got, want)
	}
	if _, err := createCalendar(t, h.node, weekly("no-wednesdays", "WED"), false); err != nil {
		t.Fatal(err)
	}
	if got, want := preview("no-wednesdays"), days(1, 3, 4, 7, 8, 10, 11, 14, 15, 17); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("preview without Wednesdays:\n%v\nwant\n%v", got, want)
	}
	for _, bad := range []struct {
		req   *taskdv1.PreviewTriggersRequest
		field string
	}{
		{&taskdv1.PreviewTriggersRequest{Triggers: []*taskdv1.Trigger{cronTrigger("0 30 2 ? * MON-FRU", "")}}, "triggers[0].cron.expression"},
		{&taskdv1.PreviewTriggersRequest{}, "triggers"},
		{&taskdv1.PreviewTriggersRequest{Triggers: []*taskdv1.Trigger{cronTrigger("0 0 * * * ?", "")}, Count: 1001}, "count"},
		{&taskdv1.PreviewTriggersRequest{Triggers: []*taskdv1.Trigger{cronTrigger("0 0 * * * ?", "")}, Calendars: []string{"nope"}}, "calendars[0]"},
	} {
		if _, err := h.node.Client.PreviewTriggers(ctx, bad.req); status.Code(err) != codes.InvalidArgument || !contains(err.Error(), bad.field) {
			t.Fatalf("preview %v: %v, want INVALID_ARGUMENT naming %s", bad.req, err, bad.field)
		}
	}
}

package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

const (
	updateMethod         = "/taskd.v1.TaskService/UpdateTask"
	createCalendarMethod = "/taskd.v1.TaskService/CreateCalendar"
	deleteCalendarMethod = "/taskd.v1.TaskService/DeleteCalendar"
)

// Update replaces a task's spec, conditional on the revision read, and is
// sent once: its answer lost, the caller gets UNAVAILABLE after one
// attempt while the update stands. A TaskSpec's Proto is sent as it is.
func TestUpdate(t *testing.T) {
	f, c, ctx := faultyNode(t)

	recovery := true
	task, _, err := c.Schedule(ctx, client.TaskSpec{Proto: &taskdv1.TaskSpec{Identity: "upd", Kind: "report", Scope: taskdv1.Scope_SCOPE_IDENTITY,
		RequestsRecovery: &recovery, Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{Delay: durationpb.New(time.Hour)}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !task.Proto.GetSpec().GetRequestsRecovery() || task.Proto.GetSpec().RequestsRecovery == nil {
		t.Fatalf("the spec's explicit requests_recovery was not sent as given: %v", task.Proto.GetSpec())
	}

	spec := task.Spec
	spec.Data, spec.Priority = nil, 7
	updated, err := c.Update(ctx, "upd", task.ID, spec, task.Revision)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if updated.Spec.Priority != 7 || updated.Revision <= task.Revision {
		t.Fatalf("updated: priority %d, revision %d after %d", updated.Spec.Priority, updated.Revision, task.Revision)
	}
	// The revision read before that update is stale now.
	if _, err := c.Update(ctx, "upd", task.ID, spec, task.Revision); !errors.Is(err, client.ErrAborted) {
		t.Fatalf("Update at a stale revision: %v, want ErrAborted", err)
	}

	f.arm(updateMethod, 1, false)
	before := f.calls.Load()
	spec.Priority = 9
	_, err = c.Update(ctx, "upd", task.ID, spec, updated.Revision)
	var e *client.Error
	if !errors.Is(err, client.ErrUnavailable) || !errors.As(err, &e) || e.Attempts != 1 || f.calls.Load()-before != 1 {
		t.Fatalf("Update whose answer is lost: %v after %d calls, want UNAVAILABLE after 1", err, f.calls.Load()-before)
	}
	if got, err := c.Get(ctx, "upd", task.ID); err != nil || got.Spec.Priority != 9 {
		t.Fatalf("after the update whose answer was lost: %v, priority %d, want 9", err, got.Spec.Priority)
	}
}

// WithoutGeneratedKeys stores a task without a key as it is, and such a
// Schedule is sent once: its answer lost, one task is stored and the
// caller gets UNAVAILABLE.
func TestWithoutGeneratedKeys(t *testing.T) {
	f, c, ctx := faultyNode(t, client.WithoutGeneratedKeys())

	task, _, err := c.Schedule(ctx, later("keyless"))
	if err != nil || task.Spec.IdempotencyKey != "" {
		t.Fatalf("Schedule: %v, key %q; want no key", err, task.Spec.IdempotencyKey)
	}
	f.arm(scheduleMethod, 1, false)
	if _, _, err := c.Schedule(ctx, later("keyless")); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("keyless Schedule whose answer is lost: %v, want UNAVAILABLE", err)
	}
	f.arm(scheduleMany, 1, false)
	if _, err := c.ScheduleMany(ctx, []client.TaskSpec{later("keyless"), later("keyless")}); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("keyless ScheduleMany whose answer is lost: %v, want UNAVAILABLE", err)
	}
	if n := countTasks(t, c, "keyless"); n != 4 {
		t.Fatalf("%d tasks, want 4: each call stored its tasks once", n)
	}
	// A key of the caller's own still makes a call safe to retry.
	keyed := later("keyless")
	keyed.IdempotencyKey = "mine"
	f.arm(scheduleMethod, 1, false)
	if _, existing, err := c.Schedule(ctx, keyed); err != nil || !existing {
		t.Fatalf("keyed Schedule whose answer is lost: %v, existing %v; want the retry to find it", err, existing)
	}
}

// ListPage returns one page at a time with the token of the next, as List
// yields them all.
func TestListPage(t *testing.T) {
	c := dial(t, []string{endpoint})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	specs := make([]client.TaskSpec, 5)
	for i := range specs {
		specs[i] = later("paged")
		specs[i].Labels = map[string]string{"n": fmt.Sprint(i)}
	}
	if _, err := c.ScheduleMany(ctx, specs); err != nil {
		t.Fatal(err)
	}
	var ids []string
	pages, token := 0, ""
	for {
		tasks, next, err := c.ListPage(ctx, client.ListFilter{Identity: "paged", States: []client.State{client.StateScheduled}, PageSize: 2}, token)
		if err != nil {
			t.Fatalf("ListPage %d: %v", pages, err)
		}
		pages++
		for _, task := range tasks {
			ids = append(ids, task.ID)
		}
		if next == "" {
			break
		}
		token = next
	}
	var all []string
	for task, err := range c.List(ctx, client.ListFilter{Identity: "paged"}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, task.ID)
	}
	if pages != 3 || fmt.Sprint(ids) != fmt.Sprint(all) {
		t.Fatalf("%d pages of %v, want 3 pages of %v", pages, ids, all)
	}
	if _, _, err := c.ListPage(ctx, client.ListFilter{States: []client.State{"LATE"}}, ""); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("ListPage of an unknown state: %v, want ErrInvalidArgument", err)
	}
}

// Preview computes fire times without scheduling, with a calendar's
// exclusions; calendars are created, replaced, read, listed and deleted,
// and a Delete retried after its answer was lost succeeds. A creation
// without replace is sent once.
func TestPreviewAndCalendars(t *testing.T) {
	f, c, ctx := faultyNode(t)

	weekend := client.Calendar{Name: "weekend", Weekly: []string{"SAT", "SUN"}, Description: "no runs at the weekend"}
	cal, err := c.CreateCalendar(ctx, weekend, false)
	if err != nil || cal.Name != "weekend" || fmt.Sprint(cal.Weekly) != "[SAT SUN]" || cal.Revision == 0 {
		t.Fatalf("CreateCalendar: %v, %+v", err, cal)
	}
	if _, err := c.CreateCalendar(ctx, weekend, false); !errors.Is(err, client.ErrAlreadyExists) {
		t.Fatalf("a second CreateCalendar: %v, want ErrAlreadyExists", err)
	}
	f.arm(createCalendarMethod, 1, false)
	if _, err := c.CreateCalendar(ctx, client.Calendar{Name: "nights", Daily: &client.DailyWindow{Start: "00:00", End: "06:00"}}, false); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("CreateCalendar whose answer is lost: %v, want UNAVAILABLE (not retried)", err)
	}
	f.arm(createCalendarMethod, 1, false)
	if _, err := c.CreateCalendar(ctx, client.Calendar{Name: "nights", Daily: &client.DailyWindow{Start: "00:00", End: "07:00"}}, true); err != nil {
		t.Fatalf("replacing CreateCalendar whose answer is lost: %v, want the retry to succeed", err)
	}
	got, err := c.Calendar(ctx, "nights")
	if err != nil || got.Daily == nil || got.Daily.End != "07:00" {
		t.Fatalf("Calendar nights: %v, %+v", err, got)
	}
	cals, err := c.Calendars(ctx)
	if err != nil || len(cals) != 2 || cals[0].Name != "nights" || cals[1].Name != "weekend" || cals[1].Proto.GetWeekly() == nil {
		t.Fatalf("Calendars: %v, %+v", err, cals)
	}

	// Mondays at 9:00 from a Friday, the weekend excluded: no Saturday or
	// Sunday is among them.
	from := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC) // a Friday
	daily := client.Cron("0 0 9 * * ?", "UTC")
	fts, err := c.Preview(ctx, client.PreviewSpec{Triggers: []client.Trigger{daily}, Calendars: []string{"weekend"}, From: from, Count: 3})
	if err != nil || len(fts) != 3 {
		t.Fatalf("Preview: %v, %v", err, fts)
	}
	for i, want := range []time.Time{from.Add(9 * time.Hour), from.AddDate(0, 0, 3).Add(9 * time.Hour), from.AddDate(0, 0, 4).Add(9 * time.Hour)} {
		if !fts[i].At.Equal(want) || fts[i].Trigger != 0 || fts[i].Proto == nil {
			t.Fatalf("fire time %d: %+v, want %v", i, fts[i], want)
		}
	}
	if _, err := c.Preview(ctx, client.PreviewSpec{Triggers: []client.Trigger{daily}, Calendars: []string{"nope"}}); !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), "calendars[0]") {
		t.Fatalf("Preview with an unknown calendar: %v, want ErrInvalidArgument naming calendars[0]", err)
	}

	removedDespiteLostAnswer(t, f, deleteCalendarMethod, "calendar",
		func() error { return c.DeleteCalendar(ctx, "nights") },
		func() error { _, err := c.Calendar(ctx, "nights"); return err })
}

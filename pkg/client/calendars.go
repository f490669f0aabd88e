package client

import (
	"context"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Calendar is a named exclusion calendar (docs/calendars.md): a task that
// lists it in TaskSpec.Calendars does not fire at the times it excludes.
// It has one rule, the first of Dates, Annual, Monthly, Weekly, Daily and
// Cron that is set.
type Calendar struct {
	// Name is 1-128 bytes of letters, digits, '-', '_' and '.'.
	Name        string
	Description string
	// TimeZone the days and times are read in (an IANA name; empty is UTC).
	TimeZone string
	// Base names another calendar whose exclusions this one adds to.
	Base string
	// Dates excludes these whole days.
	Dates []Date
	// Annual excludes these days every year (Year 0).
	Annual []Date
	// Monthly excludes these days of every month, 1-31; -1 is the last.
	Monthly []int32
	// Weekly excludes these days of every week: MON TUE WED THU FRI SAT SUN.
	Weekly []string
	// Daily excludes a window of every day.
	Daily *DailyWindow
	// Cron excludes every second the Quartz expression matches.
	Cron string
	// Revision is the calendar's etcd revision (returned calendars only).
	Revision int64
	// Proto is the calendar as the API returned it. Set on a calendar to
	// create, it is sent as it is instead of the fields above: for a caller
	// that holds the API's form already (one read as protojson).
	Proto *taskdv1.Calendar
}

// Date is a calendar day.
type Date struct {
	Year, Month, Day int32
}

// DailyWindow is the time window of a daily calendar: from Start
// (inclusive) to End (exclusive), "HH:MM" or "HH:MM:SS"; Invert excludes
// everything but the window.
type DailyWindow struct {
	Start, End string
	Invert     bool
}

// CreateCalendar stores a calendar and returns it as stored; replace
// overwrites one of the same name (ErrAlreadyExists without it). Replacing
// is retried as a read is: applied twice it leaves the same calendar. A
// creation without replace is not retried once it may have reached a node,
// since a retry after a lost answer would be refused as ErrAlreadyExists
// by the calendar its first attempt stored: after ErrUnavailable, look
// with Calendar before calling again.
func (c *Client) CreateCalendar(ctx context.Context, cal Calendar, replace bool) (*Calendar, error) {
	r := once
	if replace {
		r = idempotent
	}
	req := &taskdv1.CreateCalendarRequest{Calendar: cal.toProto(), Replace: replace}
	return send(ctx, c, "CreateCalendar", r, taskdv1.TaskServiceClient.CreateCalendar, req, calendarOf)
}

// Calendar returns the calendar of that name.
func (c *Client) Calendar(ctx context.Context, name string) (*Calendar, error) {
	return send(ctx, c, "Calendar", idempotent, taskdv1.TaskServiceClient.GetCalendar,
		&taskdv1.GetCalendarRequest{Name: name}, calendarOf)
}

// Calendars returns every calendar, by name.
func (c *Client) Calendars(ctx context.Context) ([]Calendar, error) {
	return send(ctx, c, "Calendars", idempotent, taskdv1.TaskServiceClient.ListCalendars, &taskdv1.ListCalendarsRequest{},
		func(resp *taskdv1.ListCalendarsResponse) []Calendar {
			return each(resp.GetCalendars(), func(p *taskdv1.Calendar) Calendar { return *calendarFromProto(p) })
		})
}

// DeleteCalendar removes a calendar that no task and no calendar uses
// (ErrFailedPrecondition naming a user otherwise). It is retried like
// Delete: a retry that finds the calendar gone after an attempt whose
// answer was lost returns nil.
func (c *Client) DeleteCalendar(ctx context.Context, name string) error {
	return remove(ctx, c, "DeleteCalendar", c.apis, taskdv1.TaskServiceClient.DeleteCalendar, &taskdv1.DeleteCalendarRequest{Name: name})
}

func (cal Calendar) toProto() *taskdv1.Calendar {
	if cal.Proto != nil {
		return cal.Proto
	}
	p := &taskdv1.Calendar{Name: cal.Name, Description: cal.Description, TimeZone: cal.TimeZone, Base: cal.Base}
	dates := func(ds []Date) []*taskdv1.Date {
		out := make([]*taskdv1.Date, len(ds))
		for i, d := range ds {
			out[i] = &taskdv1.Date{Year: d.Year, Month: d.Month, Day: d.Day}
		}
		return out
	}
	switch {
	case len(cal.Dates) > 0:
		p.Kind = &taskdv1.Calendar_Dates{Dates: &taskdv1.DatesCalendar{Dates: dates(cal.Dates)}}
	case len(cal.Annual) > 0:
		p.Kind = &taskdv1.Calendar_Annual{Annual: &taskdv1.AnnualCalendar{Days: dates(cal.Annual)}}
	case len(cal.Monthly) > 0:
		p.Kind = &taskdv1.Calendar_Monthly{Monthly: &taskdv1.MonthlyCalendar{Days: cal.Monthly}}
	case len(cal.Weekly) > 0:
		p.Kind = &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: cal.Weekly}}
	case cal.Daily != nil:
		p.Kind = &taskdv1.Calendar_Daily{Daily: &taskdv1.DailyCalendar{Start: cal.Daily.Start, End: cal.Daily.End, Invert: cal.Daily.Invert}}
	case cal.Cron != "":
		p.Kind = &taskdv1.Calendar_Cron{Cron: &taskdv1.CronCalendar{Expression: cal.Cron}}
	}
	// None set: the server refuses the calendar for having no rule.
	return p
}

// calendarOf is the calendar of a response that holds one.
func calendarOf[R interface{ GetCalendar() *taskdv1.Calendar }](r R) *Calendar {
	return calendarFromProto(r.GetCalendar())
}

func calendarFromProto(p *taskdv1.Calendar) *Calendar {
	if p == nil {
		return nil
	}
	cal := &Calendar{Name: p.GetName(), Description: p.GetDescription(), TimeZone: p.GetTimeZone(), Base: p.GetBase(),
		Revision: p.GetRevision(), Proto: p}
	dates := func(ds []*taskdv1.Date) []Date {
		out := make([]Date, len(ds))
		for i, d := range ds {
			out[i] = Date{Year: d.GetYear(), Month: d.GetMonth(), Day: d.GetDay()}
		}
		return out
	}
	switch k := p.GetKind().(type) {
	case *taskdv1.Calendar_Dates:
		cal.Dates = dates(k.Dates.GetDates())
	case *taskdv1.Calendar_Annual:
		cal.Annual = dates(k.Annual.GetDays())
	case *taskdv1.Calendar_Monthly:
		cal.Monthly = k.Monthly.GetDays()
	case *taskdv1.Calendar_Weekly:
		cal.Weekly = k.Weekly.GetDays()
	case *taskdv1.Calendar_Daily:
		cal.Daily = &DailyWindow{Start: k.Daily.GetStart(), End: k.Daily.GetEnd(), Invert: k.Daily.GetInvert()}
	case *taskdv1.Calendar_Cron:
		cal.Cron = k.Cron.GetExpression()
	}
	return cal
}

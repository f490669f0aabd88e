package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file renders exclusion calendars, each rule in the syntax of its
// calendar create flag.

// calendarKind names a calendar's kind as the create flags do.
func calendarKind(c *taskdv1.Calendar) string {
	switch c.GetKind().(type) {
	case *taskdv1.Calendar_Dates:
		return "dates"
	case *taskdv1.Calendar_Annual:
		return "annual"
	case *taskdv1.Calendar_Monthly:
		return "monthly"
	case *taskdv1.Calendar_Weekly:
		return "weekly"
	case *taskdv1.Calendar_Daily:
		return "daily"
	case *taskdv1.Calendar_Cron:
		return "cron"
	}
	return "none"
}

// describeCalendarRule renders a calendar's rule in the syntax of its
// create flag. A list longer than maxItems (0: no limit) is cut, saying
// how many more there are.
func describeCalendarRule(c *taskdv1.Calendar, maxItems int) string {
	list := func(items []string) string {
		if maxItems > 0 && len(items) > maxItems {
			return strings.Join(items[:maxItems], ",") + fmt.Sprintf(" and %d more", len(items)-maxItems)
		}
		return strings.Join(items, ",")
	}
	var items []string
	switch k := c.GetKind().(type) {
	case *taskdv1.Calendar_Dates:
		for _, d := range k.Dates.GetDates() {
			items = append(items, fmt.Sprintf("%04d-%02d-%02d", d.GetYear(), d.GetMonth(), d.GetDay()))
		}
		return list(items)
	case *taskdv1.Calendar_Annual:
		for _, d := range k.Annual.GetDays() {
			items = append(items, fmt.Sprintf("%02d-%02d", d.GetMonth(), d.GetDay()))
		}
		return list(items)
	case *taskdv1.Calendar_Monthly:
		for _, d := range k.Monthly.GetDays() {
			items = append(items, strconv.Itoa(int(d)))
		}
		return list(items)
	case *taskdv1.Calendar_Weekly:
		return list(k.Weekly.GetDays())
	case *taskdv1.Calendar_Daily:
		s := k.Daily.GetStart() + "-" + k.Daily.GetEnd()
		if k.Daily.GetInvert() {
			s += " inverted (all but the window)"
		}
		return s
	case *taskdv1.Calendar_Cron:
		return strconv.Quote(k.Cron.GetExpression())
	}
	return ""
}

// zoneName renders a calendar's time zone, UTC when unset.
func zoneName(z string) string {
	if z == "" {
		return "UTC"
	}
	return z
}

// calendarListItems is how many days of a list a calendars table shows.
const calendarListItems = 5

// WriteCalendarDetail writes one calendar as aligned "Field: value" lines,
// its rule in full.
func WriteCalendarDetail(w io.Writer, c *taskdv1.Calendar) error {
	tw := newTable(w)
	field := func(name, value string) { row(tw, name+":", value) }
	field("Name", c.GetName())
	field("Kind", calendarKind(c))
	field("Rule", describeCalendarRule(c, 0))
	field("Time zone", zoneName(c.GetTimeZone()))
	field("Base", c.GetBase())
	field("Description", c.GetDescription())
	field("Revision", strconv.FormatInt(c.GetRevision(), 10))
	return tw.Flush()
}

// WriteCalendarsTable writes calendars as a table: name, kind, zone, base,
// and the rule (long lists cut).
func WriteCalendarsTable(w io.Writer, cals []*taskdv1.Calendar) error {
	tw := newTable(w)
	row(tw, "NAME", "KIND", "ZONE", "BASE", "RULE")
	for _, c := range cals {
		row(tw, c.GetName(), calendarKind(c), zoneName(c.GetTimeZone()), c.GetBase(), describeCalendarRule(c, calendarListItems))
	}
	return tw.Flush()
}

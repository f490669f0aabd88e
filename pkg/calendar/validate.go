package calendar

import (
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/taskd/taskd/pkg/cron"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Limits on one calendar.
const (
	MaxNameLen        = 128  // bytes of a calendar name
	MaxDescriptionLen = 1024 // bytes of a description
	MaxEntries        = 1000 // entries in any one list (dates, days)
)

// FieldError names the request field that is wrong, as a path such as
// "calendar.dates.dates[2].day", and says why.
type FieldError struct {
	Field  string
	Reason string
}

// Error returns "field: reason".
func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Validate checks one calendar on its own, without looking at other
// calendars: its name, description, time zone and base name, that it has a
// kind, and that the kind's fields are well formed. field is the path of c
// in the request, e.g. "calendar"; an error is a *FieldError whose Field
// extends it down to the wrong value.
func Validate(field string, c *taskdv1.Calendar) error {
	_, err := build(field, c)
	return err
}

// ValidateName reports why name is not a calendar name: 1-MaxNameLen
// bytes of letters, digits, '-', '_' and '.'.
func ValidateName(name string) error {
	if why := validName(name); why != "" {
		return errors.New(why)
	}
	return nil
}

// validName reports why name is not a calendar name, or "" if it is one.
func validName(name string) string {
	if name == "" {
		return "must not be empty"
	}
	if len(name) > MaxNameLen {
		return fmt.Sprintf("is %d bytes, the limit is %d", len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '-', b == '_', b == '.':
		default:
			return fmt.Sprintf("%.*q has a character other than letters, digits, '-', '_' and '.'", MaxNameLen, name)
		}
	}
	return ""
}

// loadZone loads an IANA zone name; empty is UTC. "Local" is refused: it
// would mean a different zone on each node.
func loadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if len(name) > cron.MaxZoneLen {
		return nil, fmt.Errorf("is %d bytes, the limit is %d", len(name), cron.MaxZoneLen)
	}
	if name == "Local" {
		return nil, errors.New(`"Local" is not allowed: name an IANA zone such as "Europe/Berlin"`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%q is not a known IANA time zone", name)
	}
	return loc, nil
}

// build validates c and makes its own rule (its base is not looked at).
func build(field string, c *taskdv1.Calendar) (*rule, error) {
	if c == nil {
		return nil, fieldErr(field, "is required")
	}
	if why := validName(c.GetName()); why != "" {
		return nil, fieldErr(field+".name", "%s", why)
	}
	if n := len(c.GetDescription()); n > MaxDescriptionLen {
		return nil, fieldErr(field+".description", "is %d bytes, the limit is %d", n, MaxDescriptionLen)
	}
	if !utf8.ValidString(c.GetDescription()) {
		return nil, fieldErr(field+".description", "is not valid UTF-8")
	}
	loc, err := loadZone(c.GetTimeZone())
	if err != nil {
		return nil, fieldErr(field+".time_zone", "%s", err.Error())
	}
	if base := c.GetBase(); base != "" {
		if why := validName(base); why != "" {
			return nil, fieldErr(field+".base", "%s", why)
		}
		if base == c.GetName() {
			return nil, fieldErr(field+".base", "must not be the calendar itself")
		}
	}
	r := &rule{loc: loc}
	switch k := c.GetKind().(type) {
	case *taskdv1.Calendar_Dates:
		r.kind, err = buildDates(field+".dates.dates", k.Dates.GetDates())
	case *taskdv1.Calendar_Annual:
		r.kind, err = buildAnnual(field+".annual.days", k.Annual.GetDays())
	case *taskdv1.Calendar_Monthly:
		r.kind, err = buildMonthly(field+".monthly.days", k.Monthly.GetDays())
	case *taskdv1.Calendar_Weekly:
		r.kind, err = buildWeekly(field+".weekly.days", k.Weekly.GetDays())
	case *taskdv1.Calendar_Daily:
		r.kind, err = buildDaily(field+".daily", k.Daily)
	case *taskdv1.Calendar_Cron:
		r.kind, err = buildCron(field+".cron.expression", k.Cron.GetExpression(), loc)
	case nil:
		return nil, fieldErr(field, "names no calendar kind (dates, annual, monthly, weekly, daily or cron)")
	default:
		return nil, fieldErr(field, "unknown calendar kind")
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

func tooMany(field string, n int) error {
	if n > MaxEntries {
		return fieldErr(field, "has %d entries, the limit is %d", n, MaxEntries)
	}
	return nil
}

func buildDates(field string, list []*taskdv1.Date) (kind, error) {
	if err := tooMany(field, len(list)); err != nil {
		return nil, err
	}
	days := make(dates, 0, len(list))
	for i, d := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		if y := d.GetYear(); y < 1 || y > 9999 {
			return nil, fieldErr(f+".year", "is %d, must be 1 to 9999", y)
		}
		if err := checkMonthDay(f, int(d.GetYear()), d.GetMonth(), d.GetDay()); err != nil {
			return nil, err
		}
		days = append(days, daysFromCivil(int(d.GetYear()), time.Month(d.GetMonth()), int(d.GetDay())))
	}
	slices.Sort(days)
	return byDay{days: slices.Compact(days)}, nil
}

// checkMonthDay checks month and day of a date in year y; y = 0 checks an
// annual day, for which 29 February is valid (it is excluded in the years
// that have it).
func checkMonthDay(field string, y int, month, d int32) error {
	if month < 1 || month > 12 {
		return fieldErr(field+".month", "is %d, must be 1 to 12", month)
	}
	m := time.Month(month)
	if y == 0 {
		if n := daysIn(2000, m); d < 1 || int(d) > n {
			return fieldErr(field+".day", "is %d, %s has %d days at most", d, m, n)
		}
		return nil
	}
	if n := daysIn(y, m); d < 1 || int(d) > n {
		return fieldErr(field+".day", "is %d, %s %d has %d days", d, m, y, n)
	}
	return nil
}

func buildAnnual(field string, list []*taskdv1.Date) (kind, error) {
	if err := tooMany(field, len(list)); err != nil {
		return nil, err
	}
	k := new(annual)
	for i, d := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		if d.GetYear() != 0 {
			return nil, fieldErr(f+".year", "is %d, must be 0: an annual day is in every year", d.GetYear())
		}
		if err := checkMonthDay(f, 0, d.GetMonth(), d.GetDay()); err != nil {
			return nil, err
		}
		k[d.GetMonth()][d.GetDay()] = true
	}
	return byDay{days: k, always: excludesEveryDay(k)}, nil
}

func buildMonthly(field string, list []int32) (kind, error) {
	if err := tooMany(field, len(list)); err != nil {
		return nil, err
	}
	k := new(monthly)
	for i, d := range list {
		switch {
		case d == -1:
			k.last = true
		case d >= 1 && d <= 31:
			k.days[d] = true
		default:
			return nil, fieldErr(fmt.Sprintf("%s[%d]", field, i), "is %d, must be 1 to 31, or -1 for the last day of the month", d)
		}
	}
	return byDay{days: k, always: excludesEveryDay(k)}, nil
}

var weekdayNames = map[string]time.Weekday{
	"SUN": time.Sunday, "MON": time.Monday, "TUE": time.Tuesday, "WED": time.Wednesday,
	"THU": time.Thursday, "FRI": time.Friday, "SAT": time.Saturday,
}

func buildWeekly(field string, list []string) (kind, error) {
	if err := tooMany(field, len(list)); err != nil {
		return nil, err
	}
	k := new(weekly)
	for i, name := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		wd, ok := weekdayNames[name]
		if !ok {
			return nil, fieldErr(f, "is %q, must be one of MON TUE WED THU FRI SAT SUN", name)
		}
		if k[wd] {
			return nil, fieldErr(f, "%s is listed twice", name)
		}
		k[wd] = true
	}
	return byDay{days: k, always: excludesEveryDay(k)}, nil
}

func buildDaily(field string, d *taskdv1.DailyCalendar) (kind, error) {
	start, ok := parseClock(d.GetStart())
	if !ok {
		return nil, fieldErr(field+".start", "must be HH:MM or HH:MM:SS")
	}
	if start == day {
		return nil, fieldErr(field+".start", "must be before 24:00")
	}
	end, ok := parseClock(d.GetEnd())
	if !ok {
		return nil, fieldErr(field+".end", "must be HH:MM or HH:MM:SS (24:00 for the end of the day)")
	}
	if end <= start {
		return nil, fieldErr(field+".end", "must be after start")
	}
	return daily{start: start, end: end, invert: d.GetInvert()}, nil
}

// parseClock reads "HH:MM" or "HH:MM:SS" as a time of day; "24:00" and
// "24:00:00" read as the end of the day.
func parseClock(s string) (time.Duration, bool) {
	if len(s) != 5 && len(s) != 8 {
		return 0, false
	}
	var parts [3]int
	for i := 0; i < len(s); i += 3 {
		if i > 0 && s[i-1] != ':' {
			return 0, false
		}
		hi, lo := s[i], s[i+1]
		if hi < '0' || hi > '9' || lo < '0' || lo > '9' {
			return 0, false
		}
		parts[i/3] = int(hi-'0')*10 + int(lo-'0')
	}
	h, m, sec := parts[0], parts[1], parts[2]
	if h == 24 && m == 0 && sec == 0 {
		return day, true
	}
	if h > 23 || m > 59 || sec > 59 {
		return 0, false
	}
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second, true
}

func buildCron(field, expr string, loc *time.Location) (kind, error) {
	e, err := cron.Parse(expr, loc)
	if err != nil {
		return nil, fieldErr(field, "%s", err.Error())
	}
	return newCronKind(e, loc), nil
}

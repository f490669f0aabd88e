package calendarcmd

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/cli/render"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file turns the flags of calendar create, or its -f file, into the
// calendar to create.

// calendarOptions holds the calendar create flags as given.
type calendarOptions struct {
	Weekly      string // SAT,SUN
	Dates       string // 2026-12-25,2026-12-26
	Annual      string // 12-25,01-01
	Monthly     string // 1,15,-1
	Daily       string // 02:00-03:30
	Cron        string
	Invert      bool
	TimeZone    string
	Base        string
	Description string
	Replace     bool
	File        string // -f: one Calendar in JSON
}

// calendarKindFlags names the flags that each give a calendar its rule; a
// calendar has exactly one.
var calendarKindFlags = []string{"weekly", "dates", "annual", "monthly", "daily", "cron"}

// defineCalendarCreateFlags registers the calendar create flags into o.
func defineCalendarCreateFlags(fs *flag.FlagSet, o *calendarOptions) {
	fs.StringVar(&o.Weekly, "weekly", "", "exclude these `DAYS` of every week, e.g. SAT,SUN")
	fs.StringVar(&o.Dates, "dates", "", "exclude these `DAYS`, e.g. 2026-12-25,2026-12-26")
	fs.StringVar(&o.Annual, "annual", "", "exclude these `DAYS` of every year, as MM-DD, e.g. 12-25,01-01")
	fs.StringVar(&o.Monthly, "monthly", "", "exclude these `DAYS` of every month, 1-31 and -1 for the last, e.g. 1,15,-1")
	fs.StringVar(&o.Daily, "daily", "", "exclude the `WINDOW` START-END of every day, HH:MM[:SS], e.g. 02:00-03:30 (END after START; 24:00 is the end of the day)")
	fs.BoolVar(&o.Invert, "invert", false, "with --daily: exclude everything but the window")
	fs.StringVar(&o.Cron, "cron", "", "exclude every second the Quartz cron `EXPR` matches, e.g. '* * 0-7 ? * *'")
	fs.StringVar(&o.TimeZone, "tz", "", "IANA time `ZONE` the days and times are read in, e.g. Europe/Berlin (default UTC)")
	fs.StringVar(&o.Base, "base", "", "`NAME` of a calendar whose exclusions this one adds to")
	fs.StringVar(&o.Description, "description", "", "`TEXT` for people")
	fs.BoolVar(&o.Replace, "replace", false, "overwrite a calendar of the same name (its tasks keep it; the new rule applies to fire times to come)")
	fs.StringVar(&o.File, "f", "", "create the calendar in the JSON `FILE` instead (one Calendar as the gRPC API spells it); - reads stdin")
	fs.StringVar(&o.File, "file", "", "same as -f (`FILE`)")
}

// buildCalendarRequest turns the calendar create flags and the NAME
// argument into a CreateCalendarRequest. given reports whether a flag was
// on the command line. Every error is a cmdline.UsageError naming the flag.
func buildCalendarRequest(name string, o calendarOptions, given func(string) bool) (*taskdv1.CreateCalendarRequest, error) {
	if name == "" {
		return nil, cmdline.Usagef("missing calendar NAME")
	}
	var kinds []string
	for _, k := range calendarKindFlags {
		if given(k) {
			kinds = append(kinds, k)
		}
	}
	switch len(kinds) {
	case 0:
		return nil, cmdline.Usagef("missing rule: give one of --weekly, --dates, --annual, --monthly, --daily or --cron")
	case 1:
	default:
		return nil, cmdline.Usagef("--%s and --%s exclude each other: a calendar has one rule (chain calendars with --base)", kinds[0], kinds[1])
	}
	if o.Invert && kinds[0] != "daily" {
		return nil, cmdline.Usagef("--invert needs --daily")
	}
	c := &taskdv1.Calendar{Name: name, TimeZone: o.TimeZone, Base: o.Base, Description: o.Description}
	switch kinds[0] {
	case "weekly":
		days, err := parseWeekdays(o.Weekly)
		if err != nil {
			return nil, err
		}
		c.Kind = &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: days}}
	case "dates":
		dates, err := parseDates(o.Dates)
		if err != nil {
			return nil, err
		}
		c.Kind = &taskdv1.Calendar_Dates{Dates: &taskdv1.DatesCalendar{Dates: dates}}
	case "annual":
		days, err := parseAnnualDays(o.Annual)
		if err != nil {
			return nil, err
		}
		c.Kind = &taskdv1.Calendar_Annual{Annual: &taskdv1.AnnualCalendar{Days: days}}
	case "monthly":
		days, err := parseMonthDays(o.Monthly)
		if err != nil {
			return nil, err
		}
		c.Kind = &taskdv1.Calendar_Monthly{Monthly: &taskdv1.MonthlyCalendar{Days: days}}
	case "daily":
		d, err := parseDailyWindow(o.Daily, o.Invert)
		if err != nil {
			return nil, err
		}
		c.Kind = &taskdv1.Calendar_Daily{Daily: d}
	case "cron":
		if strings.TrimSpace(o.Cron) == "" {
			return nil, cmdline.Usagef("invalid value %q for flag --cron: want a cron expression such as '* * 0-7 ? * *'", o.Cron)
		}
		c.Kind = &taskdv1.Calendar_Cron{Cron: &taskdv1.CronCalendar{Expression: o.Cron}}
	}
	return &taskdv1.CreateCalendarRequest{Calendar: c, Replace: o.Replace}, nil
}

// splitList splits a comma-separated flag value into trimmed items; an
// empty item is an error naming the flag.
func splitList(name, v, want string) ([]string, error) {
	items := strings.Split(v, ",")
	for i, it := range items {
		items[i] = strings.TrimSpace(it)
		if items[i] == "" {
			return nil, cmdline.Usagef("invalid value %q for flag --%s: want %s", v, name, want)
		}
	}
	return items, nil
}

// weekdayNames maps the names --weekly accepts, in upper case, to the
// names the API takes.
var weekdayNames = map[string]string{
	"MON": "MON", "TUE": "TUE", "WED": "WED", "THU": "THU", "FRI": "FRI", "SAT": "SAT", "SUN": "SUN",
	"MONDAY": "MON", "TUESDAY": "TUE", "WEDNESDAY": "WED", "THURSDAY": "THU", "FRIDAY": "FRI", "SATURDAY": "SAT", "SUNDAY": "SUN",
}

// parseWeekdays parses --weekly: day names (MON or Monday, in any case),
// each once.
func parseWeekdays(v string) ([]string, error) {
	const want = "days of the week such as SAT,SUN"
	items, err := splitList("weekly", v, want)
	if err != nil {
		return nil, err
	}
	days := make([]string, 0, len(items))
	for _, it := range items {
		d, ok := weekdayNames[strings.ToUpper(it)]
		if !ok {
			return nil, cmdline.Usagef("invalid value %q for flag --weekly: %q is not a day of the week (MON TUE WED THU FRI SAT SUN)", v, it)
		}
		if slices.Contains(days, d) {
			return nil, cmdline.Usagef("invalid value %q for flag --weekly: %s is given twice", v, d)
		}
		days = append(days, d)
	}
	return days, nil
}

// parseDates parses --dates: days as YYYY-MM-DD that exist.
func parseDates(v string) ([]*taskdv1.Date, error) {
	const want = "days as YYYY-MM-DD such as 2026-12-25,2026-12-26"
	items, err := splitList("dates", v, want)
	if err != nil {
		return nil, err
	}
	dates := make([]*taskdv1.Date, 0, len(items))
	for _, it := range items {
		t, err := time.Parse(time.DateOnly, it)
		if err != nil {
			return nil, cmdline.Usagef("invalid value %q for flag --dates: %q is not a day; want %s", v, it, want)
		}
		dates = append(dates, &taskdv1.Date{Year: int32(t.Year()), Month: int32(t.Month()), Day: int32(t.Day())})
	}
	return dates, nil
}

// parseAnnualDays parses --annual: days of the year as MM-DD (29 February
// included: it is excluded in the years that have it).
func parseAnnualDays(v string) ([]*taskdv1.Date, error) {
	const want = "days of the year as MM-DD such as 12-25,01-01"
	items, err := splitList("annual", v, want)
	if err != nil {
		return nil, err
	}
	days := make([]*taskdv1.Date, 0, len(items))
	for _, it := range items {
		ms, ds, ok := strings.Cut(it, "-")
		m, errM := strconv.Atoi(ms)
		d, errD := strconv.Atoi(ds)
		// A leap year has every day of the year.
		if !ok || errM != nil || errD != nil || m < 1 || m > 12 || d < 1 || d > daysIn(2000, time.Month(m)) {
			return nil, cmdline.Usagef("invalid value %q for flag --annual: %q is not a day of the year; want %s", v, it, want)
		}
		days = append(days, &taskdv1.Date{Month: int32(m), Day: int32(d)})
	}
	return days, nil
}

// daysIn is the number of days of month m in year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// parseMonthDays parses --monthly: days of the month 1-31, -1 the last.
func parseMonthDays(v string) ([]int32, error) {
	items, err := splitList("monthly", v, "days of the month such as 1,15,-1")
	if err != nil {
		return nil, err
	}
	days := make([]int32, 0, len(items))
	for _, it := range items {
		d, err := strconv.Atoi(it)
		if err != nil || (d != -1 && (d < 1 || d > 31)) {
			return nil, cmdline.Usagef("invalid value %q for flag --monthly: %q is not a day of the month; want 1 to 31, or -1 for the last", v, it)
		}
		days = append(days, int32(d))
	}
	return days, nil
}

// parseDailyWindow parses --daily START-END. A window that wraps past
// midnight is refused with the equivalent window to give instead: the
// excluded time of 22:00-06:00 is what 06:00-22:00 --invert excludes.
func parseDailyWindow(v string, invert bool) (*taskdv1.DailyCalendar, error) {
	const want = "START-END as HH:MM or HH:MM:SS, such as 02:00-03:30"
	start, end, ok := strings.Cut(strings.TrimSpace(v), "-")
	if !ok {
		return nil, cmdline.Usagef("invalid value %q for flag --daily: want %s", v, want)
	}
	start, end = strings.TrimSpace(start), strings.TrimSpace(end)
	s, okS := clockSeconds(start)
	e, okE := clockSeconds(end)
	if !okS || !okE || s == 24*3600 {
		return nil, cmdline.Usagef("invalid value %q for flag --daily: want %s (24:00 only as END)", v, want)
	}
	switch {
	case s == e:
		return nil, cmdline.Usagef("invalid value %q for flag --daily: the window is empty (START equals END)", v)
	case e < s:
		instead := fmt.Sprintf("--daily %s-%s --invert", end, start)
		if invert {
			instead = fmt.Sprintf("--daily %s-%s without --invert", end, start)
		}
		return nil, cmdline.Usagef("invalid value %q for flag --daily: the window wraps past midnight, which one daily calendar cannot hold (END must be after START); to exclude the same time give %s", v, instead)
	}
	return &taskdv1.DailyCalendar{Start: start, End: end, Invert: invert}, nil
}

// clockSeconds parses a time of day HH:MM or HH:MM:SS with two digits each
// (24:00 and 24:00:00 allowed) into seconds after midnight.
func clockSeconds(v string) (int, bool) {
	parts := strings.Split(v, ":")
	if len(parts) != 2 && len(parts) != 3 {
		return 0, false
	}
	limits := []int{24, 59, 59}
	secs := 0
	for i, p := range parts {
		if len(p) != 2 || p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9' {
			return 0, false
		}
		n := int(p[0]-'0')*10 + int(p[1]-'0')
		if n > limits[i] {
			return 0, false
		}
		secs = secs*60 + n
	}
	if len(parts) == 2 {
		secs *= 60
	}
	if secs > 24*3600 {
		return 0, false
	}
	return secs, true
}

// readCalendarFile reads calendar create -f: one Calendar in protojson
// from path ("-": stdin). Errors are cmdline.UsageErrors naming the flag.
func readCalendarFile(stdin io.Reader, path string) (*taskdv1.Calendar, error) {
	b, err := cmdline.ReadFile(stdin, path)
	if err != nil {
		return nil, err
	}
	c := &taskdv1.Calendar{}
	if err := protojson.Unmarshal(b, c); err != nil {
		return nil, cmdline.Usagef("invalid value %q for flag -f: want one calendar as JSON: %v", path, render.OneLine(err.Error()))
	}
	return c, nil
}

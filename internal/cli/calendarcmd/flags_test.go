package calendarcmd

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/cli/cmdline"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// parseCalendarCreate parses calendar create's flags and NAME from args
// and builds the request.
func parseCalendarCreate(t *testing.T, args ...string) (*taskdv1.CreateCalendarRequest, error) {
	t.Helper()
	var o calendarOptions
	fs := cmdline.NewFlagSet("calendar create")
	defineCalendarCreateFlags(fs, &o)
	pos, err := cmdline.ParseInterspersed(fs, args)
	if err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	name := ""
	if len(pos) > 0 {
		name = pos[0]
	}
	return buildCalendarRequest(name, o, func(n string) bool { return cmdline.FlagGiven(fs, n) })
}

func date(y, m, d int32) *taskdv1.Date { return &taskdv1.Date{Year: y, Month: m, Day: d} }

func TestBuildCalendarRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want *taskdv1.Calendar
		repl bool
	}{
		{"weekly", []string{"weekend", "--weekly", "SAT,SUN"},
			&taskdv1.Calendar{Name: "weekend", Kind: &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: []string{"SAT", "SUN"}}}}, false},
		{"weekly in any case, full names, spaces", []string{"--weekly", "sat, Sunday ,mon", "w"},
			&taskdv1.Calendar{Name: "w", Kind: &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: []string{"SAT", "SUN", "MON"}}}}, false},
		{"dates with zone, base, description, replace",
			[]string{"xmas", "--dates", "2026-12-25,2026-12-26,2028-02-29", "--tz", "Europe/Berlin", "--base", "weekend", "--description", "Christmas 2026", "--replace"},
			&taskdv1.Calendar{Name: "xmas", TimeZone: "Europe/Berlin", Base: "weekend", Description: "Christmas 2026",
				Kind: &taskdv1.Calendar_Dates{Dates: &taskdv1.DatesCalendar{Dates: []*taskdv1.Date{date(2026, 12, 25), date(2026, 12, 26), date(2028, 2, 29)}}}}, true},
		{"annual, 29 February included", []string{"a", "--annual", "12-25,01-01,2-29"},
			&taskdv1.Calendar{Name: "a", Kind: &taskdv1.Calendar_Annual{Annual: &taskdv1.AnnualCalendar{Days: []*taskdv1.Date{date(0, 12, 25), date(0, 1, 1), date(0, 2, 29)}}}}, false},
		{"monthly with the last day", []string{"m", "--monthly", "1,15,-1"},
			&taskdv1.Calendar{Name: "m", Kind: &taskdv1.Calendar_Monthly{Monthly: &taskdv1.MonthlyCalendar{Days: []int32{1, 15, -1}}}}, false},
		{"monthly last day alone", []string{"m", "--monthly", "-1"},
			&taskdv1.Calendar{Name: "m", Kind: &taskdv1.Calendar_Monthly{Monthly: &taskdv1.MonthlyCalendar{Days: []int32{-1}}}}, false},
		{"daily", []string{"maint", "--daily", "02:00-03:30", "--tz", "America/New_York"},
			&taskdv1.Calendar{Name: "maint", TimeZone: "America/New_York", Kind: &taskdv1.Calendar_Daily{Daily: &taskdv1.DailyCalendar{Start: "02:00", End: "03:30"}}}, false},
		{"daily inverted with seconds up to the end of the day", []string{"night", "--daily", "06:00:30-24:00", "--invert"},
			&taskdv1.Calendar{Name: "night", Kind: &taskdv1.Calendar_Daily{Daily: &taskdv1.DailyCalendar{Start: "06:00:30", End: "24:00", Invert: true}}}, false},
		{"cron", []string{"early", "--cron", "* * 0-7 ? * *"},
			&taskdv1.Calendar{Name: "early", Kind: &taskdv1.Calendar_Cron{Cron: &taskdv1.CronCalendar{Expression: "* * 0-7 ? * *"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCalendarCreate(t, tc.args...)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			want := &taskdv1.CreateCalendarRequest{Calendar: tc.want, Replace: tc.repl}
			if !proto.Equal(want, got) {
				t.Errorf("request mismatch:\n got: %v\nwant: %v", got, want)
			}
		})
	}
}

func TestBuildCalendarRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--weekly", "SAT"}, "missing calendar NAME"},
		{[]string{"c"}, "missing rule: give one of --weekly"},
		{[]string{"c", "--weekly", "SAT", "--dates", "2026-12-25"}, "--weekly and --dates exclude each other"},
		{[]string{"c", "--cron", "* * * ? * *", "--monthly", "1"}, "--monthly and --cron exclude each other"},
		{[]string{"c", "--weekly", ""}, `invalid value "" for flag --weekly`},
		{[]string{"c", "--weekly", "SAT,,SUN"}, `invalid value "SAT,,SUN" for flag --weekly`},
		{[]string{"c", "--weekly", "SAT,SONNTAG"}, `"SONNTAG" is not a day of the week`},
		{[]string{"c", "--weekly", "sat,SATURDAY"}, "flag --weekly: SAT is given twice"},
		{[]string{"c", "--dates", "2026-02-30"}, `invalid value "2026-02-30" for flag --dates: "2026-02-30" is not a day`},
		{[]string{"c", "--dates", "2027-02-29"}, "flag --dates"},
		{[]string{"c", "--dates", "25.12.2026"}, "flag --dates"},
		{[]string{"c", "--dates", "2026-12-25,"}, "flag --dates"},
		{[]string{"c", "--annual", "13-01"}, `"13-01" is not a day of the year`},
		{[]string{"c", "--annual", "04-31"}, "flag --annual"},
		{[]string{"c", "--annual", "2026-12-25"}, "flag --annual"},
		{[]string{"c", "--annual", "xmas"}, "flag --annual"},
		{[]string{"c", "--monthly", "0"}, `"0" is not a day of the month`},
		{[]string{"c", "--monthly", "32"}, "flag --monthly"},
		{[]string{"c", "--monthly", "-2"}, "flag --monthly"},
		{[]string{"c", "--monthly", "last"}, "flag --monthly"},
		{[]string{"c", "--daily", "22:00-06:00"}, "wraps past midnight"},
		{[]string{"c", "--daily", "22:00-06:00"}, "give --daily 06:00-22:00 --invert"},
		{[]string{"c", "--daily", "22:00-06:00", "--invert"}, "give --daily 06:00-22:00 without --invert"},
		{[]string{"c", "--daily", "09:00-09:00"}, "flag --daily: the window is empty"},
		{[]string{"c", "--daily", "9:00-17:00"}, "flag --daily: want START-END"},
		{[]string{"c", "--daily", "09:00"}, "flag --daily"},
		{[]string{"c", "--daily", "09:60-10:00"}, "flag --daily"},
		{[]string{"c", "--daily", "24:00-24:30"}, "flag --daily"},
		{[]string{"c", "--daily", "23:00-24:01"}, "flag --daily"},
		{[]string{"c", "--daily", "09:00-17:00:99"}, "flag --daily"},
		{[]string{"c", "--weekly", "SAT", "--invert"}, "--invert needs --daily"},
		{[]string{"c", "--cron", "  "}, "flag --cron"},
	} {
		if req, err := parseCalendarCreate(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("calendar create %q: %v, %v; want an error containing %q", tc.args, req, err, tc.want)
		} else if _, ok := err.(*cmdline.UsageError); !ok {
			t.Errorf("calendar create %q: %T, want a usage error", tc.args, err)
		}
	}
}

func TestReadCalendarFile(t *testing.T) {
	in := strings.NewReader(`{"name": "weekend", "time_zone": "Europe/Berlin", "weekly": {"days": ["SAT", "SUN"]}}`)
	got, err := readCalendarFile(in, "-")
	if err != nil {
		t.Fatal(err)
	}
	want := &taskdv1.Calendar{Name: "weekend", TimeZone: "Europe/Berlin", Kind: &taskdv1.Calendar_Weekly{Weekly: &taskdv1.WeeklyCalendar{Days: []string{"SAT", "SUN"}}}}
	if !proto.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, text := range []string{``, `[]`, `{"name": "x", "weekly": {"days": "SAT"}}`, `{"nmae": "x"}`} {
		if c, err := readCalendarFile(strings.NewReader(text), "-"); err == nil || !strings.Contains(err.Error(), `invalid value "-" for flag -f`) {
			t.Errorf("file %q: %v, %v; want an error naming -f", text, c, err)
		}
	}
}

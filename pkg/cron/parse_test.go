package cron

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFieldSets(t *testing.T) {
	for _, c := range []struct {
		expr  string
		field int
		want  []int
	}{
		{"5/15 * * * * ?", fSeconds, []int{5, 20, 35, 50}},
		{"/20 * * * * ?", fSeconds, []int{0, 20, 40}}, // Quartz reads "/n" as "*/n"
		{"*/20 * * * * ?", fSeconds, []int{0, 20, 40}},
		{"59-0 * * * * ?", fSeconds, []int{0, 59}},
		{"*,5 * * * * ?", fSeconds, seq(0, 59)},
		{"007 * * * * ?", fSeconds, []int{7}},
		{"0 50-10 * * * ?", fMinutes, append(seq(0, 10), seq(50, 59)...)},
		{"0 50-10/5 * * * ?", fMinutes, []int{0, 5, 10, 50, 55}},
		{"0 0 22-2 * * ?", fHours, []int{0, 1, 2, 22, 23}},
		{"0 0 22-2/3 * * ?", fHours, []int{1, 22}}, // the step counts across midnight
		{"0 0 1/3 * * ?", fHours, []int{1, 4, 7, 10, 13, 16, 19, 22}},
		{"0 0 0 */5 * ?", fDayOfMonth, []int{1, 6, 11, 16, 21, 26, 31}},
		{"0 0 0 28-2 * ?", fDayOfMonth, []int{1, 2, 28, 29, 30, 31}},
		{"0 0 0 ? NOV-FEB MON", fMonth, []int{1, 2, 11, 12}},
		{"0 0 0 ? nov-feb MON", fMonth, []int{1, 2, 11, 12}},
		{"0 0 0 ? */3 MON", fMonth, []int{1, 4, 7, 10}},
		{"0 0 0 ? 7/6 MON", fMonth, []int{7}}, // from July, every sixth month, within the year
		{"0 0 0 ? JAN,mar,Dec MON", fMonth, []int{1, 3, 12}},
		{"0 0 0 ? * FRI-MON", fDayOfWeek, []int{1, 2, 6, 7}},
		{"0 0 0 ? * fri-mon", fDayOfWeek, []int{1, 2, 6, 7}},
		{"0 0 0 ? * 7-1", fDayOfWeek, []int{1, 7}},
		{"0 0 0 ? * 2/2", fDayOfWeek, []int{2, 4, 6}},
		{"0 0 0 ? * */3", fDayOfWeek, []int{1, 4, 7}},
		{"0 0 0 ? * L", fDayOfWeek, []int{7}}, // alone, L is Saturday
		{"0 0 0 ? * MON,WED,FRI", fDayOfWeek, []int{2, 4, 6}},
		{"  0\t0 12 * * ?  ", fHours, []int{12}}, // spaces and tabs around and between fields
	} {
		e, err := Parse(c.expr, nil)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		if got, _ := fieldValues(e, c.field); !slices.Equal(got, c.want) {
			t.Errorf("Parse(%q) %s = %v, want %v", c.expr, specs[c.field].name, got, c.want)
		}
	}
}

func TestParseYears(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []int
	}{
		{"0 0 0 1 1 ?", seq(MinYear, MaxYear)},
		{"0 0 0 1 1 ? *", seq(MinYear, MaxYear)},
		{"0 0 0 1 1 ? 1970", []int{1970}},
		{"0 0 0 1 1 ? 2099", []int{2099}},
		{"0 0 0 1 1 ? 2020-2030/5", []int{2020, 2025, 2030}},
		{"0 0 0 1 1 ? 2090/4", []int{2090, 2094, 2098}},
		{"0 0 0 1 1 ? 2001,2003,2003", []int{2001, 2003}},
	} {
		e, err := Parse(c.expr, nil)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		var got []int
		for y := MinYear; y <= MaxYear; y++ {
			if e.years.has(y - MinYear) {
				got = append(got, y)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Parse(%q) years = %v, want %v", c.expr, got, c.want)
		}
	}
}

func TestParseDaySpecials(t *testing.T) {
	for _, c := range []struct {
		expr                 string
		lastDays, lastWeek   uint32
		nearest, daysOfMonth uint32
		kind                 weekKind
		dow, nth             uint8
	}{
		{expr: "0 0 12 L * ?", lastDays: 1},
		{expr: "0 0 12 L-0 * ?", lastDays: 1},
		{expr: "0 0 12 L-3 * ?", lastDays: 1 << 3},
		{expr: "0 0 12 L-30 * ?", lastDays: 1 << 30},
		{expr: "0 0 12 LW * ?", lastWeek: 1},
		{expr: "0 0 12 lw * ?", lastWeek: 1},
		{expr: "0 0 12 L-2W * ?", lastWeek: 1 << 2},
		{expr: "0 0 12 15W * ?", nearest: 1 << 15},
		{expr: "0 0 12 1,15,L-1W,L * ?", lastDays: 1, lastWeek: 1 << 1, daysOfMonth: 1<<1 | 1<<15},
		{expr: "0 0 12 ? * 6L", kind: weekLast, dow: 1 << 6},
		{expr: "0 0 12 ? * FRIL", kind: weekLast, dow: 1 << 6},
		{expr: "0 0 12 ? * 6#3", kind: weekNth, dow: 1 << 6, nth: 3},
		{expr: "0 0 12 ? * fri#5", kind: weekNth, dow: 1 << 6, nth: 5},
		{expr: "0 0 12 ? * SUN#1", kind: weekNth, dow: 1 << 1, nth: 1},
	} {
		e, err := Parse(c.expr, nil)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.expr, err)
			continue
		}
		if e.lastDays != c.lastDays || e.lastWeekdays != c.lastWeek || e.nearestWeekdays != c.nearest ||
			e.daysOfMonth != c.daysOfMonth || e.weekKind != c.kind || (c.kind != weekEvery && e.daysOfWeek != c.dow) || e.nth != c.nth {
			t.Errorf("Parse(%q) = L-n %b, L-nW %b, nW %b, days %b, week kind %d, weekdays %b, nth %d; want %b %b %b %b %d %b %d",
				c.expr, e.lastDays, e.lastWeekdays, e.nearestWeekdays, e.daysOfMonth, e.weekKind, e.daysOfWeek, e.nth,
				c.lastDays, c.lastWeek, c.nearest, c.daysOfMonth, c.kind, c.dow, c.nth)
		}
	}
}

func TestFixedHour(t *testing.T) {
	for _, c := range []struct {
		hours string
		fixed bool
	}{
		{"2", true},
		{"2,3", true},
		{"1-3", true},
		{"0-23", true}, // names every hour, but names them
		{"22-2", true},
		{"*", false},
		{"*/2", false},
		{"1/3", false},
		{"/4", false},
		{"0-23/1", false},
		{"2,*", false},
	} {
		expr := "0 0 " + c.hours + " * * ?"
		e, err := Parse(expr, nil)
		if err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
			continue
		}
		if e.FixedHour() != c.fixed {
			t.Errorf("Parse(%q).FixedHour() = %v, want %v", expr, e.FixedHour(), c.fixed)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, c := range []struct {
		expr  string
		field string
		pos   int
		msg   string
	}{
		{"", "expression", 1, "too few fields (0)"},
		{"0 0 12 * *", "expression", 11, "too few fields (5)"},
		{"0 0 12 * * ? 2020 x", "expression", 19, "too many fields"},

		{"60 * * * * ?", "seconds", 1, "value 60 out of range 0-59"},
		{"0 60 * * * ?", "minutes", 3, "value 60 out of range 0-59"},
		{"0 0 24 * * ?", "hours", 5, "value 24 out of range 0-23"},
		{"0 0 1-24 * * ?", "hours", 7, "value 24 out of range 0-23"},
		{"0 0 0 0 * ?", "day-of-month", 7, "value 0 out of range 1-31"},
		{"0 0 0 32 * ?", "day-of-month", 7, "value 32 out of range 1-31"},
		{"0 0 0 5-0 * ?", "day-of-month", 9, "value 0 out of range 1-31"},
		{"0 0 0 ? 13 MON", "month", 9, "value 13 out of range 1-12"},
		{"0 0 0 ? 0 MON", "month", 9, "value 0 out of range 1-12"},
		{"0 0 0 ? * 0", "day-of-week", 11, "value 0 out of range 1-7"},
		{"0 0 0 ? * 8", "day-of-week", 11, "value 8 out of range 1-7"},
		{"0 0 0 1 1 ? 1969", "year", 13, "value 1969 out of range 1970-2099"},
		{"0 0 0 1 1 ? 2100", "year", 13, "value 2100 out of range 1970-2099"},
		{"0 0 0 1 1 ? 2030-2020", "year", 18, "year range 2030-2020 runs backwards"},
		{"0 0 12 * * ? 1234567", "year", 14, "number too large"},

		{"*/0 * * * * ?", "seconds", 3, "step 0 out of range 1-59"},
		{"0 0 0/24 * * ?", "hours", 7, "step 24 out of range 1-23"},
		{"0 0 0 1 1 ? 2020/0", "year", 18, "step 0 out of range"},
		{"*5 * * * * ?", "seconds", 2, `unexpected '5' after "*"`},
		{"*-5 * * * * ?", "seconds", 2, `unexpected '-' after "*"`},
		{"5- * * * * ?", "seconds", 3, `"-" must be followed by a value`},
		{"1-2-3 * * * * ?", "seconds", 4, `unexpected '-'`},
		{"0 0 1,,2 * * ?", "hours", 7, "empty list item"},
		{"0 0 1, * * ?", "hours", 7, "empty list item"},
		{",1 * * * * ?", "seconds", 1, "empty list item"},
		{"0 0 JAN * * ?", "hours", 5, `unexpected 'J'`},
		{"0 0 12\n * * ?", "hours", 7, `unexpected '\n'`}, // only spaces and tabs separate fields
		{"0 0 12 * * ? é", "year", 14, `unexpected 'é'`},

		{"? 0 0 * * ?", "seconds", 1, `"?" can only be given for day-of-month or day-of-week`},
		{"0 0 0 1 1 ? ?", "year", 13, `"?" can only be given for day-of-month or day-of-week`},
		{"0 0 0 ?5 * MON", "day-of-month", 7, `"?" must be the whole field`},
		{"0 0 0 ? * ?", "day-of-week", 11, `"?" can only be given for day-of-month or day-of-week, not both`},
		{"0 0 0 L * 2", "day-of-week", 11, `day-of-month and day-of-week are both given: one of them must be "?"`},

		{"0 0 0 ? JANUARY MON", "month", 12, `unexpected 'U'`},
		{"0 0 0 ? FOO MON", "month", 9, `"FOO" is not a month name`},
		{"0 0 0 ? * FOO", "day-of-week", 11, `"FOO" is not a day name`},
		{"0 0 0 ? * mon-fox", "day-of-week", 15, `"fox" is not a day name`},
		{"0 0 0 ? * MON-5", "day-of-week", 15, "a range takes two numbers or two names"},
		{"0 0 0 ? JAN-3 MON", "month", 13, "a range takes two numbers or two names"},
		{"0 0 0 ? * MON/2", "day-of-week", 14, "a step cannot follow a name"},
		{"0 0 0 ? * MON-FRI/2", "day-of-week", 18, "a step cannot follow a name"},

		{"0 0 0 ? * 6#6", "day-of-week", 13, `"#" must be followed by a number 1-5, not 6`},
		{"0 0 0 ? * 6#0", "day-of-week", 13, `"#" must be followed by a number 1-5, not 0`},
		{"0 0 0 ? * 6#", "day-of-week", 13, `"#" must be followed by a number 1-5`},
		{"0 0 0 ? * 6#3x", "day-of-week", 14, `unexpected 'x'`},
		{"0 0 0 ? * #3", "day-of-week", 11, `'#' must follow a day of the week`},
		{"0 0 0 ? * 6#3,2", "day-of-week", 12, `"#" cannot be combined with other days of the week`},
		{"0 0 0 ? * 2,6#3", "day-of-week", 14, `"#" cannot be combined with other days of the week`},
		{"0 0 0 ? * 6#1#2", "day-of-week", 14, `unexpected '#'`},
		{"0 0 0 ? * 5L,6", "day-of-week", 12, `"L" cannot be combined with other days of the week`},
		{"0 0 0 ? * L,MON", "day-of-week", 11, `"L" cannot be combined with other days of the week`},
		{"0 0 0 ? * 8L", "day-of-week", 11, "value 8 out of range 1-7"},
		{"0 0 0 ? * 0L", "day-of-week", 11, "value 0 out of range 1-7"},
		{"0 0 0 ? * 1-5L", "day-of-week", 12, `'L' must follow a single day of the week`},
		{"0 0 0 ? * 5LW", "day-of-week", 13, `unexpected 'W' after "5L"`},
		{"0 0 0 ? * LW", "day-of-week", 11, `'L' must follow a day of the week`},

		{"0 0 0 1-5W * ?", "day-of-month", 8, `"W" must follow a single day of the month, not a range or step`},
		{"0 0 0 */5W * ?", "day-of-month", 7, `"W" must follow a single day of the month, as in 15W`},
		{"0 0 0 0W * ?", "day-of-month", 7, `"W" needs a day of the month 1-31, not 0`},
		{"0 0 0 W * ?", "day-of-month", 7, `"W" must follow a single day of the month, as in 15W`},
		{"0 0 0 L-31 * ?", "day-of-month", 9, "offset from the last day 31 out of range 0-30"},
		{"0 0 0 L- * ?", "day-of-month", 9, `"L-" must be followed by the number of days before the last day`},
		{"0 0 0 L-3-5 * ?", "day-of-month", 10, `unexpected '-' after "L-3"`},
		{"0 0 0 LX * ?", "day-of-month", 8, `unexpected 'X' after "L"`},
		{"0 0 0 5L * ?", "day-of-month", 8, `unexpected 'L'`},
		{"0 0 0 L/2 * ?", "day-of-month", 8, `unexpected '/' after "L"`},

		// Quartz accepts these but ignores part of them; rejected here
		// rather than read differently (docs/cron.md lists them).
		{"0 0 0 ? * MON-FRIDAY", "day-of-week", 18, `unexpected 'D'`},
		{"0 0 0 ? JAN/2 MON", "month", 12, "a step cannot follow a name"},
		{"0-10/120 * * * * ?", "seconds", 6, "step 120 out of range 1-59"},
		{"5/0 * * * * ?", "seconds", 3, "step 0 out of range 1-59"},
		{"0 0 0 ? * 0#1", "day-of-week", 11, "value 0 out of range 1-7"},
		{"0 0 0 ? * 8#1", "day-of-week", 11, "value 8 out of range 1-7"},
		{"L * * * * ?", "seconds", 1, `unexpected 'L'`},
		{"0 0 0 ?x * MON", "day-of-month", 7, `"?" must be the whole field`},
		{"0 0 0 ? * L-2", "day-of-week", 11, `'L' must follow a day of the week`},
	} {
		_, err := Parse(c.expr, nil)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a *SyntaxError", c.expr, err)
			continue
		}
		if se.Field != c.field || se.Pos != c.pos || !strings.Contains(se.Msg, c.msg) {
			t.Errorf("Parse(%q) = %q, want field %s, position %d, message with %q", c.expr, se, c.field, c.pos, c.msg)
		}
	}
}

func TestSyntaxErrorNamesFieldAndPosition(t *testing.T) {
	_, err := Parse("0 15 10 ? * ?", nil)
	want := `day-of-week at position 13: "?" can only be given for day-of-month or day-of-week, not both`
	if err == nil || err.Error() != want {
		t.Errorf("Parse error = %v, want %s", err, want)
	}
}

// An expression over MaxLen is refused before it is parsed (issue 20: a
// cron trigger of 1.5 MB was stored); one of MaxLen is parsed.
func TestParseLimitsTheLength(t *testing.T) {
	at := "0 0 12 * * ?" + strings.Repeat(" ", MaxLen-12)
	if _, err := Parse(at, nil); err != nil {
		t.Fatalf("an expression of MaxLen bytes: %v", err)
	}
	_, err := Parse(at+" ", nil)
	want := fmt.Sprintf("expression at position 1: is %d bytes, the limit is %d", MaxLen+1, MaxLen)
	if err == nil || err.Error() != want {
		t.Fatalf("Parse of MaxLen+1 bytes = %v, want %s", err, want)
	}
}

func TestParseKeepsExpressionAndZone(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	for _, c := range []struct {
		expr string
		loc  *time.Location
		want *time.Location
	}{
		{"0 0 12 * * ?", nil, time.UTC},
		{"  0 0 12 * * ?\t", berlin, berlin},
		{"0 0 12 ? * mon-fri", time.UTC, time.UTC},
	} {
		e, err := Parse(c.expr, c.loc)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.expr, err)
		}
		if e.String() != c.expr || e.Location() != c.want {
			t.Errorf("Parse(%q, %v): String() = %q, Location() = %v", c.expr, c.loc, e.String(), e.Location())
		}
	}
}

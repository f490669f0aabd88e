package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/taskd/taskd/internal/cli/command"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The calendar and events commands against the node of TestAgainstNode.

// testCalendars creates calendars from a file and from flags, lists, gets,
// previews and schedules with them, and deletes them once no task uses
// them.
func testCalendars(t *testing.T, c *cluster) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	field := func(d map[string][]string, name string) string {
		t.Helper()
		if len(d[name]) != 1 {
			t.Fatalf("field %s: %q, want one value", name, d[name])
		}
		return d[name][0]
	}

	// Christmas 2026 from a file that names no calendar: NAME names it.
	file := filepath.Join(t.TempDir(), "holidays.json")
	writeFile(t, file, `{"timeZone": "Europe/Berlin", "description": "Christmas 2026",
  "dates": {"dates": [{"year": 2026, "month": 12, "day": 24}, {"year": 2026, "month": 12, "day": 25}, {"year": 2026, "month": 12, "day": 26}]}}`)
	d := detail(c.ok(t, "calendar", "create", "cal-holidays", "-f", file))
	if field(d, "Name") != "cal-holidays" || field(d, "Kind") != "dates" || field(d, "Rule") != "2026-12-24,2026-12-25,2026-12-26" ||
		field(d, "Time zone") != "Europe/Berlin" || field(d, "Description") != "Christmas 2026" {
		t.Errorf("create -f printed %q", d)
	}

	// The weekend, based on it, from flags; again only with --replace.
	d = detail(c.ok(t, "calendar", "create", "weekend", "--weekly", "sat,sun", "--tz", "Europe/Berlin", "--base", "cal-holidays"))
	first, err := strconv.ParseInt(field(d, "Revision"), 10, 64)
	if err != nil || field(d, "Kind") != "weekly" || field(d, "Rule") != "SAT,SUN" || field(d, "Base") != "cal-holidays" {
		t.Errorf("create printed %q", d)
	}
	c.fails(t, []string{"calendar", "create", "weekend", "--weekly", "SAT"}, "taskctl: calendar create: AlreadyExists: ", "replace")
	out := c.ok(t, "-o", "json", "calendar", "create", "weekend", "--weekly", "SAT,SUN", "--tz", "Europe/Berlin", "--base", "cal-holidays",
		"--description", "no batch runs", "--replace")
	var created taskdv1.CreateCalendarResponse
	if err := protojson.Unmarshal([]byte(out), &created); err != nil {
		t.Fatalf("create -o json: %v\n%s", err, out)
	}
	if cal := created.GetCalendar(); cal.GetDescription() != "no batch runs" || cal.GetRevision() <= first || !slices.Equal(cal.GetWeekly().GetDays(), []string{"SAT", "SUN"}) {
		t.Errorf("replaced calendar %v, want the new description at a revision after %d", cal, first)
	}
	// What the server refuses is printed with its code.
	c.fails(t, []string{"calendar", "create", "bad", "--weekly", "SAT", "--tz", "Mars/Olympus"}, "InvalidArgument: calendar.time_zone")
	c.fails(t, []string{"calendar", "create", "bad", "--weekly", "SAT", "--base", "nope"}, "InvalidArgument: calendar.base")

	// list and get.
	want := [][]string{
		{"NAME", "KIND", "ZONE", "BASE", "RULE"},
		{"cal-holidays", "dates", "Europe/Berlin", "-", "2026-12-24,2026-12-25,2026-12-26"},
		{"weekend", "weekly", "Europe/Berlin", "cal-holidays", "SAT,SUN"},
	}
	if rows := tableLines(c.ok(t, "calendar", "list")); fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("calendar list: %q, want %q", rows, want)
	}
	out = c.ok(t, "calendar", "get", "weekend", "-o", "json")
	var got taskdv1.GetCalendarResponse
	if err := protojson.Unmarshal([]byte(out), &got); err != nil || got.GetCalendar().GetBase() != "cal-holidays" || got.GetCalendar().GetTimeZone() != "Europe/Berlin" {
		t.Errorf("calendar get -o json: %v, %v\n%s", &got, err, out)
	}
	c.fails(t, []string{"calendar", "get", "nope"}, "taskctl: calendar get: NotFound: ", `"nope"`)

	// preview with the calendar: noon in Berlin skips Christmas and the
	// weekend after it.
	wantPreview := "2026-12-23T12:00:00+01:00  2026-12-23T11:00:00Z\n" +
		"2026-12-28T12:00:00+01:00  2026-12-28T11:00:00Z\n"
	if out := c.ok(t, "preview", "--cron", "0 0 12 * * ?", "--tz", "Europe/Berlin", "--calendar", "weekend", "--from", "2026-12-23T00:00:00Z", "-n", "2"); out != wantPreview {
		t.Errorf("preview --calendar weekend:\n%s\nwant\n%s", out, wantPreview)
	}
	c.fails(t, []string{"preview", "--cron", "0 0 12 * * ?", "--calendar", "nope"}, "InvalidArgument: calendars[0]")

	// schedule --calendar: the coming fire times skip the weekend.
	id := c.scheduled(t, "--identity", "cal", "--kind", "echo", "--scope", "identity", "--cron", "0 0 12 * * ?", "--tz", "Europe/Berlin", "--calendar", "weekend")
	d = detail(c.ok(t, "get", "--identity", "cal", id))
	if field(d, "Calendars") != "weekend" || len(d["Coming fire"]) != 5 {
		t.Fatalf("get of a task with a calendar: Calendars %q, Coming fire %q", d["Calendars"], d["Coming fire"])
	}
	for _, s := range d["Coming fire"] {
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		if wd := at.In(berlin).Weekday(); wd == time.Saturday || wd == time.Sunday {
			t.Errorf("coming fire %s is on a %s in Berlin", s, wd)
		}
	}
	c.fails(t, []string{"schedule", "--identity", "cal", "--kind", "echo", "--scope", "identity", "--calendar", "nope"}, "InvalidArgument: task.calendars[0]")

	// A calendar in use stays: a task lists weekend, weekend is based on
	// cal-holidays.
	c.fails(t, []string{"calendar", "delete", "weekend"}, "taskctl: calendar delete: FailedPrecondition: ", "task "+id)
	if _, _, errOut := c.ctl(t, "calendar", "delete", "weekend"); errOut != `taskctl: calendar delete: FailedPrecondition: calendar "weekend" is in use by task `+id+" (and maybe others)\n" {
		t.Errorf("calendar delete of a calendar in use: stderr %q, want the reason once", errOut)
	}
	c.fails(t, []string{"calendar", "delete", "cal-holidays"}, "FailedPrecondition: ", "calendar weekend")

	// Once the task lists it no more, it goes; then its base.
	c.ok(t, "update", "--identity", "cal", id, "--no-calendars")
	if out := c.ok(t, "calendar", "delete", "weekend"); out != "calendar weekend deleted\n" {
		t.Errorf("calendar delete printed %q", out)
	}
	if out := c.ok(t, "-o", "json", "calendar", "delete", "cal-holidays"); strings.TrimSpace(out) != "{}" {
		t.Errorf("calendar delete -o json printed %q", out)
	}
	if rows := tableLines(c.ok(t, "calendar", "list")); len(rows) != 1 {
		t.Errorf("calendar list after the deletes: %q", rows)
	}
	c.fails(t, []string{"calendar", "delete", "weekend"}, "NotFound")
	c.ok(t, "cancel", "--identity", "cal", id)
}

// syncBuffer is a bytes.Buffer that a command writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// eventLine is one line of events' text output.
type eventLine struct {
	text, typ, identity, task, cursor string
	run                               int64
}

// parseEventLines splits events' text output into its lines: time, type,
// identity, task, then parts such as "run 3", and "cursor C" last.
func parseEventLines(t *testing.T, out string) []eventLine {
	t.Helper()
	var lines []eventLine
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		// The type is padded to a width; the other fields are apart by
		// two spaces.
		ts, rest, _ := strings.Cut(l, "  ")
		typ, rest, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
		f := strings.Split(strings.TrimLeft(rest, " "), "  ")
		if len(f) < 3 {
			t.Fatalf("event line %q has too few fields", l)
		}
		at, err := time.Parse(time.RFC3339, ts)
		if err != nil || len(ts) != len("2026-11-30T00:17:49.123Z") || at.Location() != time.UTC {
			t.Errorf("event line %q: time %q is not RFC 3339 UTC with milliseconds", l, ts)
		}
		el := eventLine{text: l, typ: typ, identity: f[0], task: f[1]}
		for _, part := range f[2:] {
			k, v, _ := strings.Cut(part, " ")
			switch k {
			case "run":
				el.run, _ = strconv.ParseInt(v, 10, 64)
			case "cursor":
				el.cursor = v
			}
		}
		if !strings.HasPrefix(f[len(f)-1], "cursor ") || el.cursor == "" {
			t.Errorf("event line %q does not end with its cursor", l)
		}
		lines = append(lines, el)
	}
	return lines
}

// cursorAfter reports whether cursor a ("<revision>.<index>") comes after b.
func cursorAfter(t *testing.T, a, b string) bool {
	t.Helper()
	parse := func(c string) (int64, int64) {
		r, i, ok := strings.Cut(c, ".")
		rev, err1 := strconv.ParseInt(r, 10, 64)
		idx, err2 := strconv.ParseInt(i, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("cursor %q is not <revision>.<index>", c)
		}
		return rev, idx
	}
	ra, ia := parse(a)
	rb, ib := parse(b)
	return ra > rb || (ra == rb && ia > ib)
}

// testEvents follows the events of a task scheduled while events -f
// runs, catches up on them again from a cursor (text and JSON), and ends
// with a cursor that etcd's compaction has made too old.
func testEvents(t *testing.T, c *cluster) {
	// events -f until the test cancels it, as Ctrl-C would.
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runEnv([]string{"--addr", c.node.Addr, "events", "-f", "--identity", "ev-follow"}, &command.Env{Ctx: ctx, Stdout: &out, Stderr: &errOut})
	}()
	stopped := false
	stop := func() int {
		cancel()
		select {
		case code := <-done:
			stopped = true
			return code
		case <-time.After(20 * time.Second):
			t.Fatal("events -f did not stop within 20s of its context's end")
		}
		return -1
	}
	defer func() {
		if !stopped {
			stop()
		}
	}()

	// Twenty runs, 100ms apart: the stream sees the runs from the time it
	// is set up (which this test cannot observe) to the last.
	const runs = 20
	id := c.scheduled(t, "--identity", "ev-follow", "--kind", "echo", "--scope", "identity", "--every", "100ms", "--count", strconv.Itoa(runs))
	c.scheduled(t, "--identity", "ev-other", "--kind", "echo", "--scope", "identity")
	tst.Eventually(t, 20*time.Second, func() bool { return strings.Contains(out.String(), "FINALIZED") },
		"the FINALIZED event of the followed task; output so far:\n%s", out.String())
	if code := stop(); code != exitOK || errOut.String() != "" {
		t.Fatalf("events -f stopped: exit %d, stderr %q; want 0 and nothing", code, errOut.String())
	}
	followed := parseEventLines(t, out.String())
	var succeeded []eventLine
	for _, l := range followed {
		if l.identity != "ev-follow" || l.task != id {
			t.Errorf("followed line %q is not of task ev-follow/%s", l.text, id)
		}
		if l.typ == "SUCCEEDED" {
			if !strings.Contains(l.text, "  node ctl  outcome SUCCESS") {
				t.Errorf("SUCCEEDED line %q lacks the node and outcome", l.text)
			}
			if len(succeeded) > 0 && l.run != succeeded[len(succeeded)-1].run+1 {
				t.Errorf("SUCCEEDED of run %d after run %d", l.run, succeeded[len(succeeded)-1].run)
			}
			succeeded = append(succeeded, l)
		}
	}
	for i := 1; i < len(followed); i++ {
		if !cursorAfter(t, followed[i].cursor, followed[i-1].cursor) {
			t.Errorf("cursor %s after %s", followed[i].cursor, followed[i-1].cursor)
		}
	}
	// Runs due within the look-ahead are armed: their FIRED and STARTED
	// lines come in the order of the writes, with their fire time as their
	// time (so later than the lines after them), marked "armed"; no other
	// line is.
	armed := 0
	for _, l := range followed {
		if !strings.Contains(l.text, "  armed  ") {
			continue
		}
		ts, _, _ := strings.Cut(l.text, "  ")
		if (l.typ != "FIRED" && l.typ != "STARTED") || !strings.Contains(l.text, "  next "+ts+"  ") {
			t.Errorf("line %q is marked armed: want only FIRED and STARTED whose time is their fire time", l.text)
		}
		armed++
	}
	if armed == 0 {
		t.Errorf("no FIRED or STARTED line of a task firing every 100ms is marked armed:\n%s", out.String())
	}
	if last := followed[len(followed)-1]; last.typ != "FINALIZED" || len(succeeded) == 0 || succeeded[len(succeeded)-1].run != runs {
		t.Fatalf("followed output ends with %q after %d SUCCEEDED lines, want FINALIZED after the SUCCEEDED of run %d", last.text, len(succeeded), runs)
	}

	// From the first cursor seen, events without -f prints the same
	// SUCCEEDED lines, then stops once quiet.
	from := followed[0].cursor
	var wantLines []string
	for _, l := range succeeded {
		if l.cursor != from {
			wantLines = append(wantLines, l.text)
		}
	}
	caught := c.ok(t, "events", "--cursor", from, "--identity", "ev-follow", "--type", "succeeded")
	if got := strings.Split(strings.TrimRight(caught, "\n"), "\n"); !slices.Equal(got, wantLines) {
		t.Errorf("events --cursor %s --type succeeded:\n%s\nwant the SUCCEEDED lines followed:\n%s", from, caught, strings.Join(wantLines, "\n"))
	}
	// -o json: one Event per line, here of two types given in other
	// spellings.
	caught = c.ok(t, "-o", "json", "events", "--cursor", from, "--task", id, "--type", "EVENT_TYPE_SUCCEEDED,Finalized")
	var jsonCursors []string
	for _, l := range strings.Split(strings.TrimRight(caught, "\n"), "\n") {
		var ev taskdv1.Event
		if err := protojson.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("events -o json line %q: %v", l, err)
		}
		if ev.GetTaskId() != id || ev.GetIdentity() != "ev-follow" {
			t.Errorf("events -o json line %q is not of the task", l)
		}
		jsonCursors = append(jsonCursors, ev.GetCursor())
	}
	var wantCursors []string
	for _, l := range followed {
		if (l.typ == "SUCCEEDED" || l.typ == "FINALIZED") && l.cursor != from {
			wantCursors = append(wantCursors, l.cursor)
		}
	}
	if !slices.Equal(jsonCursors, wantCursors) {
		t.Errorf("events -o json cursors %q, want %q", jsonCursors, wantCursors)
	}

	code, stdout, stderr := c.ctl(t, "events", "--cursor", from, "--type", "fired,boom")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, `invalid value "boom" for flag --type`) {
		t.Errorf("events with a bad --type: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	c.fails(t, []string{"events", "--cursor", "nonsense"}, "taskctl: events: InvalidArgument: ", "cursor")

	// After a compaction the cursor is too old, followed or not.
	ectx, ecancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ecancel()
	cli := c.etcd.Client(t)
	resp, err := cli.Get(ectx, "compact-here")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ectx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"events", "--cursor", from}, {"events", "-f", "--cursor", from}} {
		c.fails(t, args, "taskctl: events: OutOfRange: ", "start again without --cursor")
	}
}

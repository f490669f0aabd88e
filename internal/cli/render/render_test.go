package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func ts(s string) *timestamppb.Timestamp {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return timestamppb.New(t)
}

// sampleTask is a task with most fields set; its times are not in UTC so
// that the tables' conversion shows.
func sampleTask() *taskdv1.Task {
	plus2 := time.FixedZone("+02", 2*3600)
	return &taskdv1.Task{
		Id: "01JTASK",
		Spec: &taskdv1.TaskSpec{
			Identity: "alice",
			Kind:     "echo",
			Payload:  []byte("hello"),
			Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
				Start:    timestamppb.New(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)),
				Interval: durationpb.New(90 * time.Second),
				Count:    5,
			}}}},
			Scope:            taskdv1.Scope_SCOPE_EVERY_NODE,
			Priority:         7,
			MaxAttempts:      3,
			Timeout:          durationpb.New(5 * time.Minute),
			RequestsRecovery: proto.Bool(false),
			Labels:           map[string]string{"team": "core", "app": "x"},
			IdempotencyKey:   "k1",
			Calendars:        []string{"holidays", "weekends"},
			Backoff:          &taskdv1.Backoff{Initial: durationpb.New(2 * time.Second)},
		},
		State:        taskdv1.TaskState_TASK_STATE_SCHEDULED,
		CreatedAt:    timestamppb.New(time.Date(2026, 5, 1, 2, 0, 0, 0, plus2)),
		NextFireTime: timestamppb.New(time.Date(2026, 5, 1, 2, 3, 0, 0, plus2)),
		RunCount:     2,
		LastRun: &taskdv1.RunSummary{
			RunNumber: 2,
			Outcome:   taskdv1.Outcome_OUTCOME_WARNING,
			StartedAt: timestamppb.New(time.Date(2026, 5, 1, 0, 1, 30, 0, time.UTC)),
			EndedAt:   timestamppb.New(time.Date(2026, 5, 1, 0, 1, 31, 500e6, time.UTC)),
			Node:      "node-a",
			Message:   "disk\nalmost full",
		},
		Revision:      42,
		Paused:        true,
		PausedBy:      []string{"task", "kind"},
		NextFireTimes: []*timestamppb.Timestamp{ts("2026-05-01T00:03:00Z"), ts("2026-05-01T00:04:30Z")},
		Misfires:      3,
	}
}

// tableLines splits table output into lines of whitespace-separated cells.
func tableLines(s string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

func TestWriteTaskDetail(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTaskDetail(&b, sampleTask()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"ID:               01JTASK\n",
		"Identity:         alice\n",
		"Scope:            EVERY_NODE\n",
		"State:            SCHEDULED\n",
		"Durable:          yes\n",
		"Trigger:          every 1m30s from 2026-05-01T00:00:00Z, 5 times\n",
		"Next fire:        2026-05-01T00:03:00Z\n",
		"Coming fire:      2026-05-01T00:03:00Z\nComing fire:      2026-05-01T00:04:30Z\n",
		"Paused:           yes (by task, kind)\n",
		"Misfires:         3\n",
		"Backoff:          2s,10m (max default)\n",
		"Calendars:        holidays,weekends\n",
		"Created:          2026-05-01T00:00:00Z\n",
		"Finished:         -\n",
		"Runs:             2\n",
		"Last run:         #2 WARNING on node-a at 2026-05-01T00:01:30Z (1.5s): disk almost full\n",
		"Max attempts:     3\n",
		"Timeout:          5m\n",
		"Misfire:          SKIP (default for periodic)\n",
		"Recovery:         no\n",
		"Labels:           app=x,team=core\n",
		"Idempotency key:  k1\n",
		"Payload:          5 bytes\n",
		"Revision:         42\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("detail lacks %q:\n%s", want, out)
		}
	}
}

// A task whose due run waits for a remote worker says so, with the kind
// and since when; one that waits for nothing has no such line.
func TestWriteTaskDetailWaitingForAWorker(t *testing.T) {
	task := sampleTask()
	var b bytes.Buffer
	if err := WriteTaskDetail(&b, task); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Waiting:") {
		t.Fatalf("a task that waits for nothing shows a Waiting line:\n%s", b.String())
	}
	task.Spec.Kind = "resize"
	task.Waiting, task.WaitingSince = "worker", ts("2026-05-01T00:02:00Z")
	b.Reset()
	if err := WriteTaskDetail(&b, task); err != nil {
		t.Fatal(err)
	}
	if want := "Waiting:          for a worker of kind \"resize\" since 2026-05-01T00:02:00Z\n"; !strings.Contains(b.String(), want) {
		t.Fatalf("detail lacks %q:\n%s", want, b.String())
	}
	// The owner's reason, when it gives one, is what is shown.
	task.WaitingReason = `no handler or connected worker for kind "resize" on node n1; waiting since 2026-05-01T00:02:00Z`
	b.Reset()
	if err := WriteTaskDetail(&b, task); err != nil {
		t.Fatal(err)
	}
	if want := "Waiting:          " + task.WaitingReason + "\n"; !strings.Contains(b.String(), want) {
		t.Fatalf("detail lacks %q:\n%s", want, b.String())
	}
}

// A task whose due run waits shows it in the table's state column.
func TestWriteTasksTableWaiting(t *testing.T) {
	task := sampleTask()
	task.Waiting = "worker"
	var b bytes.Buffer
	if err := WriteTasksTable(&b, []*taskdv1.Task{task}, false); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"ID", "KIND", "STATE", "NEXT", "FIRE", "RUNS", "LAST", "OUTCOME"},
		{"01JTASK", "echo", "SCHEDULED/WAITING", "2026-05-01T00:03:00Z", "2", "WARNING"},
	}
	if rows := tableLines(b.String()); !equalRows(rows, want) {
		t.Errorf("table rows\n%q\nwant\n%q", rows, want)
	}
}

func TestDescribeTrigger(t *testing.T) {
	for _, tc := range []struct {
		tr   *taskdv1.Trigger
		want string
	}{
		{&taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}, "once now"},
		{&taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{Delay: durationpb.New(time.Hour)}}}, "once after 1h"},
		{&taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: ts("2026-05-01T10:00:00+02:00")}}}, "once at 2026-05-01T08:00:00Z"},
		{&taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
			Interval: durationpb.New(time.Minute), End: ts("2026-06-01T00:00:00Z")}}}, "every 1m, until 2026-06-01T00:00:00Z"},
		{&taskdv1.Trigger{}, "unknown trigger"},
		{&taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 30 2 ? * MON-FRI", TimeZone: "Europe/Berlin"}}},
			`cron "0 30 2 ? * MON-FRI" in Europe/Berlin`},
		{&taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 * * * ?",
			Start: ts("2026-05-01T00:00:00Z"), End: ts("2026-06-01T00:00:00Z")}}},
			`cron "0 0 * * * ?" in UTC, from 2026-05-01T00:00:00Z, until 2026-06-01T00:00:00Z`},
		{&taskdv1.Trigger{Kind: &taskdv1.Trigger_OnStartup{OnStartup: &taskdv1.OnStartupTrigger{}}}, "on start-up of the node"},
		{&taskdv1.Trigger{Name: "nightly", Misfire: taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL,
			Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(24 * time.Hour)}}},
			"nightly: every 24h, misfire FIRE_ALL"},
		{&taskdv1.Trigger{Jitter: durationpb.New(10 * time.Minute),
			Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 0 * * ?"}}},
			`cron "0 0 0 * * ?" in UTC, jitter up to 10m`},
	} {
		if got := describeTrigger(tc.tr); got != tc.want {
			t.Errorf("describeTrigger(%v) = %q, want %q", tc.tr, got, tc.want)
		}
	}
}

func TestWriteTasksTable(t *testing.T) {
	done := &taskdv1.Task{Id: "01JDONE", Spec: &taskdv1.TaskSpec{Kind: "mail"}, State: taskdv1.TaskState_TASK_STATE_COMPLETED}
	var b bytes.Buffer
	if err := WriteTasksTable(&b, []*taskdv1.Task{sampleTask(), done}, false); err != nil {
		t.Fatal(err)
	}
	rows := tableLines(b.String())
	want := [][]string{
		{"ID", "KIND", "STATE", "NEXT", "FIRE", "RUNS", "LAST", "OUTCOME"},
		{"01JTASK", "echo", "SCHEDULED", "2026-05-01T00:03:00Z", "2", "WARNING"},
		{"01JDONE", "mail", "COMPLETED", "-", "0", "-"},
	}
	if !equalRows(rows, want) {
		t.Errorf("table rows\n%q\nwant\n%q\noutput:\n%s", rows, want, b.String())
	}
	// Columns are aligned: every row's STATE starts at the same offset.
	lines := strings.Split(b.String(), "\n")
	col := strings.Index(lines[0], "STATE")
	for _, l := range lines[1:3] {
		if l[col-2:col] != "  " || l[col] == ' ' {
			t.Errorf("line %q: STATE column not at offset %d", l, col)
		}
	}
}

func TestWriteTasksTableAcrossIdentities(t *testing.T) {
	bob := &taskdv1.Task{Id: "01JBOB", Spec: &taskdv1.TaskSpec{Identity: "bob", Kind: "email"}, State: taskdv1.TaskState_TASK_STATE_PAUSED}
	var b bytes.Buffer
	if err := WriteTasksTable(&b, []*taskdv1.Task{sampleTask(), bob}, true); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"ID", "IDENTITY", "KIND", "STATE", "NEXT", "FIRE", "RUNS", "LAST", "OUTCOME"},
		{"01JTASK", "alice", "echo", "SCHEDULED", "2026-05-01T00:03:00Z", "2", "WARNING"},
		{"01JBOB", "bob", "email", "PAUSED", "-", "0", "-"},
	}
	if rows := tableLines(b.String()); !equalRows(rows, want) {
		t.Errorf("table rows\n%q\nwant\n%q", rows, want)
	}
}

func TestWriteRunsTable(t *testing.T) {
	long := strings.Repeat("x", 100)
	runs := []*taskdv1.Run{
		{
			TaskId: "01JTASK", RunNumber: 3, Attempt: 2, Node: "node-b", Outcome: taskdv1.Outcome_OUTCOME_ERROR,
			StartedAt: ts("2026-05-01T00:00:00Z"), EndedAt: timestamppb.New(time.Date(2026, 5, 1, 0, 0, 0, 250e6, time.UTC)),
			Fence: "7.1234", Message: long, Trigger: 1,
		},
		{
			TaskId: "01JTASK", RunNumber: 2, Attempt: 1, Node: "node-a", Outcome: taskdv1.Outcome_OUTCOME_SUCCESS,
			StartedAt: ts("2026-04-30T23:00:00Z"), EndedAt: ts("2026-04-30T23:02:05Z"), Fence: "6.99", Message: "ok\tdone\n",
			Trigger: 0, TriggerName: "nightly",
		},
		{TaskId: "01JTASK", RunNumber: 4, Attempt: 1, Node: "node-b", StartedAt: ts("2026-05-01T00:01:00Z"), Fence: "7.1240",
			Manual: true, Trigger: -1},
	}
	var b bytes.Buffer
	if err := WriteRunsTable(&b, runs); err != nil {
		t.Fatal(err)
	}
	rows := tableLines(b.String())
	want := [][]string{
		{"RUN", "ATTEMPT", "TRIGGER", "OUTCOME", "NODE", "STARTED", "DURATION", "FENCE", "MESSAGE"},
		{"3", "2", "1", "ERROR", "node-b", "2026-05-01T00:00:00Z", "250ms", "7.1234", strings.Repeat("x", 57) + "..."},
		{"2", "1", "nightly", "SUCCESS", "node-a", "2026-04-30T23:00:00Z", "2m5s", "6.99", "ok", "done"},
		{"4", "1", "manual", "UNSPECIFIED", "node-b", "2026-05-01T00:01:00Z", "-", "7.1240", "-"},
	}
	if !equalRows(rows, want) {
		t.Errorf("table rows\n%q\nwant\n%q\noutput:\n%s", rows, want, b.String())
	}
}

func TestWriteNodesTable(t *testing.T) {
	nodes := []*taskdv1.Node{
		{Name: "node-a", Incarnation: "inc1", Address: "10.0.0.1:7420", State: taskdv1.NodeState_NODE_STATE_RUNNING,
			DispatchStart: ts("2026-05-01T00:00:05Z"), IdentitiesOwned: 12, Kinds: []string{"echo", "resize"},
			Leader: true, LeaseRemaining: durationpb.New(9 * time.Second)},
		{Name: "node-b", Incarnation: "inc2", Address: "10.0.0.2:7420", State: taskdv1.NodeState_NODE_STATE_STARTING},
	}
	var b bytes.Buffer
	if err := WriteNodesTable(&b, nodes); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"NAME", "STATE", "ADDRESS", "INCARNATION", "DISPATCH", "START", "LEASE", "IDENTITIES", "KINDS"},
		{"node-a*", "RUNNING", "10.0.0.1:7420", "inc1", "2026-05-01T00:00:05Z", "9s", "12", "echo,resize"},
		{"node-b", "STARTING", "10.0.0.2:7420", "inc2", "-", "-", "0", "-"},
	}
	if rows := tableLines(b.String()); !equalRows(rows, want) {
		t.Errorf("table rows\n%q\nwant\n%q", rows, want)
	}
}

func TestWriteIdentityTable(t *testing.T) {
	for _, tc := range []struct {
		id   *taskdv1.Identity
		want []string
	}{
		{&taskdv1.Identity{Identity: "alice", Mapped: true, Node: "node-a", Epoch: 4, TaskCount: 9, Active: true, StatusNode: "node-a"},
			[]string{"alice", "yes", "node-a", "4", "9", "active@node-a"}},
		{&taskdv1.Identity{Identity: "carol", Mapped: true, Node: "node-b", Epoch: 5, TaskCount: 0, StatusNode: "node-b"},
			[]string{"carol", "yes", "node-b", "5", "0", "inactive@node-b"}},
		{&taskdv1.Identity{Identity: "bob"}, []string{"bob", "no", "-", "0", "0", "-"}},
	} {
		var b bytes.Buffer
		if err := WriteIdentityTable(&b, tc.id); err != nil {
			t.Fatal(err)
		}
		want := [][]string{{"IDENTITY", "MAPPED", "NODE", "EPOCH", "TASKS", "STATUS"}, tc.want}
		if rows := tableLines(b.String()); !equalRows(rows, want) {
			t.Errorf("table rows\n%q\nwant\n%q", rows, want)
		}
	}
}

func TestWritePausesTable(t *testing.T) {
	var b bytes.Buffer
	err := WritePausesTable(&b, []*taskdv1.Pause{
		{Identity: "alice", Since: ts("2026-05-01T00:00:00Z")},
		{Kind: "email", Since: ts("2026-05-02T00:00:00Z")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"PAUSED", "NAME", "SINCE"},
		{"identity", "alice", "2026-05-01T00:00:00Z"},
		{"kind", "email", "2026-05-02T00:00:00Z"},
	}
	if rows := tableLines(b.String()); !equalRows(rows, want) {
		t.Errorf("table rows\n%q\nwant\n%q", rows, want)
	}
}

func TestWriteFireTimes(t *testing.T) {
	fts := []*taskdv1.PreviewFireTime{
		{At: ts("2026-12-01T01:30:00Z"), Local: "2026-12-01T02:30:00+01:00"},
		{At: timestamppb.New(time.Date(2026, 7, 1, 0, 30, 0, 250e6, time.UTC)), Local: "2026-07-01T02:30:00+02:00", Trigger: 1},
		{At: ts("2026-12-02T01:30:00Z")}, // no local time: UTC twice
		// A periodic trigger started from the clock: to the millisecond.
		{At: timestamppb.New(time.Date(2026, 12, 2, 1, 23, 38, 451426139, time.UTC)), Local: "2026-12-02T01:23:38Z"},
	}
	for _, tc := range []struct {
		withTrigger bool
		want        string
	}{
		{false, "2026-12-01T02:30:00+01:00  2026-12-01T01:30:00Z\n" +
			"2026-07-01T02:30:00.250+02:00  2026-07-01T00:30:00.250Z\n" +
			"2026-12-02T01:30:00Z  2026-12-02T01:30:00Z\n" +
			"2026-12-02T01:23:38.451Z  2026-12-02T01:23:38.451Z\n"},
		{true, "2026-12-01T02:30:00+01:00  2026-12-01T01:30:00Z  trigger 0\n" +
			"2026-07-01T02:30:00.250+02:00  2026-07-01T00:30:00.250Z  trigger 1\n" +
			"2026-12-02T01:30:00Z  2026-12-02T01:30:00Z  trigger 0\n" +
			"2026-12-02T01:23:38.451Z  2026-12-02T01:23:38.451Z  trigger 0\n"},
	} {
		var b bytes.Buffer
		if err := WriteFireTimes(&b, fts, tc.withTrigger); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("withTrigger %v: got\n%s\nwant\n%s", tc.withTrigger, b.String(), tc.want)
		}
	}
	var b bytes.Buffer
	if err := WriteFireTimesJSON(&b, fts); err != nil {
		t.Fatal(err)
	}
	want := "[\n  \"2026-12-01T01:30:00Z\",\n  \"2026-07-01T00:30:00.25Z\",\n  \"2026-12-02T01:30:00Z\",\n  \"2026-12-02T01:23:38.451426139Z\"\n]\n"
	if b.String() != want {
		t.Errorf("JSON:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteFireTimesJSON(&b, nil); err != nil || b.String() != "[]\n" {
		t.Errorf("JSON of no fire time: %q, %v; want []", b.String(), err)
	}
}

func equalRows(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.Join(a[i], "\x00") != strings.Join(b[i], "\x00") {
			return false
		}
	}
	return true
}

func TestWriteJSON(t *testing.T) {
	for _, tc := range []struct {
		msg      proto.Message
		empty    proto.Message
		contains []string
	}{
		{&taskdv1.GetTaskResponse{Task: sampleTask()}, &taskdv1.GetTaskResponse{}, []string{`"nextFireTime"`, `"2026-05-01T00:03:00Z"`, `"SCOPE_EVERY_NODE"`, `"requestsRecovery"`}},
		{&taskdv1.ScheduleTaskResponse{Task: sampleTask(), Existing: true}, &taskdv1.ScheduleTaskResponse{}, []string{`"existing"`, `"01JTASK"`}},
		{&taskdv1.ListRunsResponse{Runs: []*taskdv1.Run{{TaskId: "t", RunNumber: 1, Fence: "1.2", Outcome: taskdv1.Outcome_OUTCOME_SUCCESS}}},
			&taskdv1.ListRunsResponse{}, []string{`"runNumber"`, `"OUTCOME_SUCCESS"`}},
		{&taskdv1.ListNodesResponse{Nodes: []*taskdv1.Node{{Name: "n", IdentitiesOwned: 3, DispatchStart: ts("2026-05-01T00:00:00Z")}}},
			&taskdv1.ListNodesResponse{}, []string{`"identitiesOwned"`, `"dispatchStart"`}},
		{&taskdv1.ListTasksResponse{Tasks: []*taskdv1.Task{sampleTask(), sampleTask()}}, &taskdv1.ListTasksResponse{}, []string{`"tasks"`}},
		{&taskdv1.GetIdentityResponse{Identity: &taskdv1.Identity{Identity: "a", TaskCount: 2}}, &taskdv1.GetIdentityResponse{}, []string{`"taskCount"`}},
	} {
		var b bytes.Buffer
		if err := WriteJSON(&b, tc.msg); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.HasPrefix(out, "{\n  \"") || !strings.HasSuffix(out, "}\n") {
			t.Errorf("output is not a multiline JSON document:\n%s", out)
		}
		for _, c := range tc.contains {
			if !strings.Contains(out, c) {
				t.Errorf("output lacks %s:\n%s", c, out)
			}
		}
		if strings.Contains(out, `"next_fire_time"`) || strings.Contains(out, `"run_number"`) {
			t.Errorf("output uses proto field names:\n%s", out)
		}
		got := tc.empty
		if err := protojson.Unmarshal(b.Bytes(), got); err != nil {
			t.Fatalf("output does not parse back: %v\n%s", err, out)
		}
		if !proto.Equal(got, tc.msg) {
			t.Errorf("round trip changed the message:\n got %v\nwant %v", got, tc.msg)
		}
	}
}

func TestHumanDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{500 * time.Nanosecond, "500ns"},
		{1500 * time.Nanosecond, "2µs"},
		{850*time.Microsecond + 400, "850µs"},
		{250*time.Millisecond + 300*time.Microsecond, "250ms"},
		{1234 * time.Millisecond, "1.23s"},
		{59 * time.Second, "59s"},
		{5*time.Minute + 3*time.Second + 400*time.Millisecond, "5m3s"},
		{5 * time.Minute, "5m"},
		{2*time.Hour + 5*time.Minute + 10*time.Second, "2h5m"},
		{3 * time.Hour, "3h"},
		{-1500 * time.Millisecond, "-1.5s"},
	} {
		if got := humanDuration(tc.d); got != tc.want {
			t.Errorf("humanDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestTrimMessage(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"", ""},
		{"  short\n", "short"},
		{"a\tb\r\nc", "a b c"},
		{strings.Repeat("é", 60), strings.Repeat("é", 60)},
		{strings.Repeat("é", 61), strings.Repeat("é", 57) + "..."},
	} {
		got := trimMessage(tc.in, messageWidth)
		if got != tc.want {
			t.Errorf("trimMessage(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if n := len([]rune(got)); n > messageWidth {
			t.Errorf("trimMessage(%q) has %d runes, want at most %d", tc.in, n, messageWidth)
		}
	}
}

func TestOutputFormatFlag(t *testing.T) {
	f := FormatTable
	for _, v := range []string{"json", "table"} {
		if err := f.Set(v); err != nil || string(f) != v {
			t.Errorf("Set(%q): %v, value %q", v, err, f)
		}
	}
	for _, v := range []string{"", "JSON", "yaml", "wide"} {
		if err := f.Set(v); err == nil {
			t.Errorf("Set(%q) accepted", v)
		}
	}
}

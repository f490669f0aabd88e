package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/cli/command"
	"github.com/taskd/taskd/pkg/client"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The tests of this file run taskctl in-process against a real node: an
// embedded etcd and a taskservice node serving its gRPC API on loopback.
// They share one node; each subtest uses identities and labels of its own.

// cluster is the node the end-to-end tests talk to.
type cluster struct {
	t    *testing.T
	etcd *tst.Etcd
	node *tst.Node
}

// startCluster starts etcd and one node with the handlers the tests
// schedule: echo succeeds, email always fails.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	etcd := tst.StartEtcd(t)
	handlers := map[string]taskservice.Handler{
		"echo":  taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil }),
		"email": taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return errors.New("smtp: connection refused") }),
	}
	n := tst.StartNode(t, etcd.Client(t), taskservice.Config{Name: "ctl", Handlers: handlers, LeaseTTL: 2 * time.Second})
	return &cluster{t: t, etcd: etcd, node: n}
}

// ctl runs taskctl against the node.
func (c *cluster) ctl(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLI(t, append([]string{"--addr", c.node.Addr}, args...)...)
}

// ok runs taskctl and fails the test unless it exits 0; it returns stdout.
func (c *cluster) ok(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := c.ctl(t, args...)
	if code != exitOK {
		t.Fatalf("taskctl %q: exit %d, stderr: %s", args, code, errOut)
	}
	return out
}

// fails runs taskctl and checks that it exits 1 with one stderr line
// "taskctl: CMD: " containing every one of want.
func (c *cluster) fails(t *testing.T, args []string, want ...string) {
	t.Helper()
	code, out, errOut := c.ctl(t, args...)
	if code != exitError {
		t.Fatalf("taskctl %q: exit %d, want %d; stdout %q, stderr %q", args, code, exitError, out, errOut)
	}
	if !strings.HasPrefix(errOut, "taskctl: ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("taskctl %q: stderr is not one 'taskctl: ' line: %q", args, errOut)
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("taskctl %q: stderr %q lacks %q", args, errOut, w)
		}
	}
}

// get reads a task directly from the node.
func (c *cluster) get(t *testing.T, identity, id string) *taskdv1.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.node.Client.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: identity, TaskId: id})
	if err != nil {
		t.Fatalf("GetTask %s/%s: %v", identity, id, err)
	}
	return resp.GetTask()
}

// waitState waits until a task is in state.
func (c *cluster) waitState(t *testing.T, identity, id string, state taskdv1.TaskState) {
	t.Helper()
	tst.Eventually(t, 20*time.Second, func() bool { return c.get(t, identity, id).GetState() == state },
		"task %s/%s to be %v", identity, id, state)
}

// scheduled runs a schedule command and returns the id it prints.
func (c *cluster) scheduled(t *testing.T, args ...string) string {
	t.Helper()
	out := c.ok(t, append([]string{"schedule"}, args...)...)
	id := strings.TrimSpace(out)
	if id == "" || strings.ContainsAny(id, " \n") {
		t.Fatalf("schedule %q printed %q, want one id", args, out)
	}
	return id
}

// detail parses the "Field: value" lines of get's output; a repeated
// field keeps every value.
func detail(out string) map[string][]string {
	m := map[string][]string{}
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		k, v, _ := strings.Cut(l, ":")
		m[k] = append(m[k], strings.TrimSpace(v))
	}
	return m
}

// tableLines splits table output into lines of whitespace-separated cells.
func tableLines(s string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

// tableIDs returns the first cell of every row of a table but its heading.
func tableIDs(out string) []string {
	var ids []string
	for _, r := range tableLines(out)[1:] {
		ids = append(ids, r[0])
	}
	slices.Sort(ids)
	return ids
}

func sorted(ids ...string) []string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

func TestAgainstNode(t *testing.T) {
	c := startCluster(t)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)

	t.Run("schedule", func(t *testing.T) {
		nightly := []string{"--identity", "sched", "--kind", "echo", "--scope", "identity",
			"--cron", "0 30 2 ? * MON-FRI", "--tz", "Europe/Berlin", "--on-startup", "--label", "team=core", "--label", "tier=1",
			"--misfire", "skip", "--backoff", "2s,1m", "--priority", "3", "--max-attempts", "5", "--timeout-task", "30s",
			"--idempotency-key", "nightly-report"}
		id := c.scheduled(t, nightly...)
		task := c.get(t, "sched", id)
		spec := task.GetSpec()
		trs := spec.GetTriggers()
		if len(trs) != 2 || trs[0].GetCron().GetExpression() != "0 30 2 ? * MON-FRI" || trs[0].GetCron().GetTimeZone() != "Europe/Berlin" ||
			trs[1].GetOnStartup() == nil {
			t.Errorf("triggers %v, want the cron in Europe/Berlin and on start-up", trs)
		}
		if spec.GetLabels()["team"] != "core" || spec.GetLabels()["tier"] != "1" || spec.GetMisfire() != taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP ||
			spec.GetBackoff().GetInitial().AsDuration() != 2*time.Second || spec.GetBackoff().GetMax().AsDuration() != time.Minute ||
			spec.GetPriority() != 3 || spec.GetMaxAttempts() != 5 || spec.GetTimeout().AsDuration() != 30*time.Second ||
			spec.GetIdempotencyKey() != "nightly-report" {
			t.Errorf("spec %v does not carry the flags", spec)
		}

		// get shows the triggers and the coming fire times, weekdays at
		// 02:30 in Berlin.
		d := detail(c.ok(t, "get", "--identity", "sched", id))
		// (the server starts a cron trigger without a start when it
		// accepts it, and get shows that start)
		// (and names each unnamed trigger by its index)
		if tr := d["Trigger"]; len(tr) != 2 || !strings.HasPrefix(tr[0], `#0: cron "0 30 2 ? * MON-FRI" in Europe/Berlin, from `) || tr[1] != "#1: on start-up of the node" {
			t.Errorf("Trigger lines %q, want the cron in Europe/Berlin and on start-up", tr)
		}
		if len(d["Coming fire"]) != 5 {
			t.Fatalf("Coming fire lines %q, want 5", d["Coming fire"])
		}
		for _, s := range d["Coming fire"] {
			at, err := time.Parse(time.RFC3339, s)
			if err != nil {
				t.Fatal(err)
			}
			local := at.In(berlin)
			if local.Hour() != 2 || local.Minute() != 30 || local.Weekday() == time.Saturday || local.Weekday() == time.Sunday {
				t.Errorf("coming fire %s is %s in Berlin, want a weekday at 02:30", s, local)
			}
		}
		for field, want := range map[string]string{"Misfire": "SKIP", "Backoff": "2s,1m", "Paused": "no", "Misfires": "0",
			"Labels": "team=core,tier=1", "Priority": "3", "Max attempts": "5"} {
			if got := d[field]; len(got) != 1 || got[0] != want {
				t.Errorf("%s: %q, want %q", field, got, want)
			}
		}

		// The same request with the same idempotency key gives the same
		// task; -o json prints the response. A different request with the
		// key is refused, naming what differs.
		out := c.ok(t, append([]string{"-o", "json", "schedule"}, nightly...)...)
		var resp taskdv1.ScheduleTaskResponse
		if err := protojson.Unmarshal([]byte(out), &resp); err != nil {
			t.Fatalf("schedule -o json: %v\n%s", err, out)
		}
		if resp.GetTask().GetId() != id || !resp.GetExisting() {
			t.Errorf("second schedule with the key: task %s, existing %v; want %s, true", resp.GetTask().GetId(), resp.GetExisting(), id)
		}
		c.fails(t, []string{"schedule", "--identity", "sched", "--kind", "echo", "--scope", "identity",
			"--cron", "0 30 2 ? * MON-FRI", "--idempotency-key", "nightly-report"}, "taskctl: schedule: AlreadyExists: task.idempotency_key", id)

		// The server's refusal is printed with its code.
		c.fails(t, []string{"schedule", "--identity", "sched", "--kind", "echo", "--scope", "identity", "--cron", "0 30 2 ? * MON-FRI", "--tz", "Mars/Olympus"},
			"taskctl: schedule: InvalidArgument: task.triggers[0].cron.time_zone")
		c.fails(t, []string{"schedule", "--identity", "sched", "--kind", "fax", "--scope", "identity"},
			"InvalidArgument: task.kind", `"fax"`)
	})

	t.Run("schedule file", func(t *testing.T) {
		dir := t.TempDir()
		// A small file: a named trigger that fires now, then every hour.
		small := filepath.Join(dir, "small.json")
		writeFile(t, small, `[
  {"identity": "batch-a", "kind": "echo", "scope": "SCOPE_IDENTITY", "labels": {"suite": "file"},
   "triggers": [{"name": "first", "once": {}}, {"name": "hourly", "periodic": {"interval": "3600s"}}]},
  {"identity": "batch-b", "kind": "echo", "scope": "SCOPE_IDENTITY", "labels": {"suite": "file"},
   "triggers": [{"cron": {"expression": "0 0 3 * * ?", "timeZone": "America/New_York"}}], "misfire": "MISFIRE_POLICY_FIRE_ALL"}
]`)
		ids := strings.Fields(c.ok(t, "schedule", "-f", small))
		if len(ids) != 2 {
			t.Fatalf("schedule -f printed %q, want two ids", ids)
		}
		if s := c.get(t, "batch-b", ids[1]).GetSpec(); s.GetTriggers()[0].GetCron().GetTimeZone() != "America/New_York" ||
			s.GetMisfire() != taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL {
			t.Errorf("second task's spec %v, want the file's", s)
		}

		// runs names the trigger that fired: "first", then "manual" for
		// run-now.
		tst.Eventually(t, 20*time.Second, func() bool { return c.get(t, "batch-a", ids[0]).GetLastRun() != nil }, "the first run")
		c.ok(t, "run-now", "--identity", "batch-a", ids[0])
		tst.Eventually(t, 20*time.Second, func() bool { return c.get(t, "batch-a", ids[0]).GetLastRun().GetRunNumber() == 2 }, "the manual run")
		rows := tableLines(c.ok(t, "runs", "--identity", "batch-a", ids[0]))
		if len(rows) != 3 || rows[0][2] != "TRIGGER" || rows[1][2] != "manual" || rows[2][2] != "first" {
			t.Errorf("runs table %q, want the manual run over the run of trigger first", rows)
		}

		// {"tasks": [...]} on stdin, with -o json.
		var out, errOut bytes.Buffer
		code := runEnv([]string{"--addr", c.node.Addr, "-o", "json", "schedule", "-f", "-"}, &command.Env{
			Stdin:  strings.NewReader(`{"tasks": [{"identity": "batch-c", "kind": "echo", "scope": "SCOPE_IDENTITY", "triggers": [{"once": {"at": "` + soon + `"}}]}]}`),
			Stdout: &out, Stderr: &errOut,
		})
		if code != exitOK {
			t.Fatalf("schedule -f -: exit %d, stderr %s", code, errOut.String())
		}
		var resp taskdv1.ScheduleTasksResponse
		if err := protojson.Unmarshal(out.Bytes(), &resp); err != nil || len(resp.GetTasks()) != 1 || resp.GetTasks()[0].GetSpec().GetIdentity() != "batch-c" {
			t.Fatalf("schedule -f - -o json: %v, %v\n%s", &resp, err, out.String())
		}

		// 150 tasks go in two calls; every id is printed once, in file order.
		var specs []string
		for i := range 150 {
			specs = append(specs, fmt.Sprintf(`{"identity": "bulk-%d", "kind": "echo", "scope": "SCOPE_IDENTITY", "labels": {"suite": "bulk", "n": "%d"}, "triggers": [{"once": {"at": %q}}]}`, i%3, i, soon))
		}
		bulk := filepath.Join(dir, "bulk.json")
		writeFile(t, bulk, "["+strings.Join(specs, ",\n")+"]")
		ids = strings.Fields(c.ok(t, "schedule", "--file", bulk))
		if len(ids) != 150 {
			t.Fatalf("schedule of 150 printed %d ids", len(ids))
		}
		for _, i := range []int{0, 99, 100, 149} {
			if got := c.get(t, fmt.Sprintf("bulk-%d", i%3), ids[i]).GetSpec().GetLabels()["n"]; got != fmt.Sprint(i) {
				t.Errorf("id %d is of task n=%s", i, got)
			}
		}
		if got := tableIDs(c.ok(t, "list", "--label", "suite=bulk", "--all")); !slices.Equal(got, sorted(ids...)) {
			t.Errorf("list --label suite=bulk: %d ids, want the 150 scheduled", len(got))
		}

		// A refusal in the second call: the first call's ids are printed
		// and the error names the task by its index in the file.
		specs[120] = strings.Replace(specs[120], `"kind": "echo"`, `"kind": "fax"`, 1)
		for i := range specs {
			specs[i] = strings.Replace(specs[i], `"suite": "bulk"`, `"suite": "bulk2"`, 1)
		}
		writeFile(t, bulk, "["+strings.Join(specs, ",\n")+"]")
		code, stdout, stderr := c.ctl(t, "schedule", "-f", bulk)
		if code != exitError || len(strings.Fields(stdout)) != 100 {
			t.Fatalf("schedule with a bad task at 120: exit %d, %d ids; stderr %s", code, len(strings.Fields(stdout)), stderr)
		}
		for _, w := range []string{"taskctl: schedule: InvalidArgument: tasks[120].kind", "the 100 tasks before it were scheduled"} {
			if !strings.Contains(stderr, w) {
				t.Errorf("stderr %q lacks %q", stderr, w)
			}
		}
	})

	t.Run("update", func(t *testing.T) {
		id := c.scheduled(t, "--identity", "upd", "--kind", "echo", "--scope", "identity", "--every", "1h", "--payload", "p1", "--label", "a=1")
		before := c.get(t, "upd", id)
		d := detail(c.ok(t, "update", "--identity", "upd", id, "--cron", "0 0 12 * * ?", "--tz", "Europe/Berlin", "--priority", "7",
			"--label", "env=prod", "--misfire", "fire-all"))
		if d["ID"][0] != id || d["Priority"][0] != "7" || d["Labels"][0] != "env=prod" || d["Misfire"][0] != "FIRE_ALL" ||
			len(d["Trigger"]) != 1 || !strings.HasPrefix(d["Trigger"][0], `#1: cron "0 0 12 * * ?" in Europe/Berlin`) {
			t.Errorf("update printed %q", d)
		}
		after := c.get(t, "upd", id)
		if string(after.GetSpec().GetPayload()) != "p1" || after.GetRevision() <= before.GetRevision() ||
			len(after.GetSpec().GetTriggers()) != 1 || after.GetSpec().GetTriggers()[0].GetCron() == nil {
			t.Errorf("after update: %v", after)
		}

		// A setting alone keeps the triggers as they are.
		c.ok(t, "update", "--identity", "upd", id, "--payload", "p2")
		if got := c.get(t, "upd", id); string(got.GetSpec().GetPayload()) != "p2" || got.GetSpec().GetTriggers()[0].GetCron().GetExpression() != "0 0 12 * * ?" {
			t.Errorf("after a payload update: %v", got)
		}

		// A revision read before another change is refused.
		c.fails(t, []string{"update", "--identity", "upd", id, "--revision", fmt.Sprint(before.GetRevision()), "--priority", "1"},
			"taskctl: update: Aborted: ", fmt.Sprintf("not %d as read", before.GetRevision()))

		// A change between this command's read and its write: ABORTED, and
		// the other change stands.
		meddled := false
		racing := &racingClient{afterGet: func(task *taskdv1.Task) {
			meddled = true
			spec := proto.Clone(task.GetSpec()).(*taskdv1.TaskSpec)
			spec.Data, spec.Priority = nil, 42
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := c.node.Client.UpdateTask(ctx, &taskdv1.UpdateTaskRequest{Identity: "upd", TaskId: id, Spec: spec}); err != nil {
				t.Errorf("the concurrent UpdateTask: %v", err)
			}
		}}
		var out, errOut bytes.Buffer
		code := runEnv([]string{"update", "--identity", "upd", id, "--priority", "5"}, &command.Env{Stdout: &out, Stderr: &errOut, Client: racing.client(t, c.node.Addr)})
		if !meddled || code != exitError || !strings.HasPrefix(errOut.String(), "taskctl: update: Aborted: ") || !strings.Contains(errOut.String(), "read it again") {
			t.Errorf("update raced by another: exit %d, stderr %q", code, errOut.String())
		}
		if got := c.get(t, "upd", id).GetSpec().GetPriority(); got != 42 {
			t.Errorf("priority %d after the refused update, want the other change's 42", got)
		}

		// What the server refuses is printed with its code.
		c.fails(t, []string{"update", "--identity", "upd", id, "--cron", "0 0 12 * * FOO"}, "InvalidArgument: spec.triggers[0].cron.expression")
		c.fails(t, []string{"update", "--identity", "upd", "0000000000000000000000000z", "--priority", "1"}, "NotFound")
	})

	t.Run("list", func(t *testing.T) {
		alice := c.scheduled(t, "--identity", "list-alice", "--kind", "echo", "--scope", "identity", "--every", "1h", "--label", "suite=list", "--label", "team=core")
		bob := c.scheduled(t, "--identity", "list-bob", "--kind", "echo", "--scope", "identity", "--every", "1h", "--label", "suite=list", "--label", "team=web")
		carol := c.scheduled(t, "--identity", "list-carol", "--kind", "email", "--scope", "identity", "--max-attempts", "1", "--label", "suite=list")
		dave := c.scheduled(t, "--identity", "list-dave", "--kind", "email", "--scope", "identity", "--at", soon, "--label", "suite=list")
		c.waitState(t, "list-carol", carol, taskdv1.TaskState_TASK_STATE_DEAD)

		out := c.ok(t, "list", "--state", "dead", "--kind", "email")
		if rows := tableLines(out); len(rows) != 2 || rows[0][1] != "IDENTITY" || rows[1][0] != carol || rows[1][1] != "list-carol" || rows[1][3] != "DEAD" {
			t.Errorf("list --state dead --kind email:\n%s", out)
		}
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"--label", "suite=list"}, sorted(alice, bob, carol, dave)},
			{[]string{"--label", "suite=list", "--label", "team=core"}, []string{alice}},
			{[]string{"--label", "suite=list", "--state", "SCHEDULED"}, sorted(alice, bob, dave)},
			{[]string{"--label", "suite=list", "--state", "TASK_STATE_DEAD", "--state", "scheduled"}, sorted(alice, bob, carol, dave)},
			{[]string{"--label", "suite=list", "--kind", "email"}, sorted(carol, dave)},
			{[]string{"--label", "suite=list", "--node", "ctl"}, sorted(alice, bob, carol, dave)},
			{[]string{"--label", "suite=list", "--node", "elsewhere"}, nil},
			{[]string{"--label", "suite=list", "--all", "--page-size", "1"}, sorted(alice, bob, carol, dave)},
			{[]string{"--identity", "list-bob"}, []string{bob}},
		} {
			if got := tableIDs(c.ok(t, append([]string{"list"}, tc.args...)...)); !slices.Equal(got, tc.want) {
				t.Errorf("list %q: %q, want %q", tc.args, got, tc.want)
			}
		}
		// One identity's listing has no IDENTITY column.
		if rows := tableLines(c.ok(t, "list", "--identity", "list-bob")); rows[0][1] != "KIND" {
			t.Errorf("list --identity heading %q", rows[0])
		}

		// Paging by hand: a page of two, then the rest from its token.
		code, out, errOut := c.ctl(t, "list", "--label", "suite=list", "--page-size", "2")
		token := errOut[strings.LastIndex(errOut, " ")+1 : len(errOut)-1]
		if code != exitOK || len(tableIDs(out)) != 2 || !strings.Contains(errOut, "more tasks may follow") {
			t.Fatalf("first page: exit %d, %q, stderr %q", code, tableIDs(out), errOut)
		}
		rest := tableIDs(c.ok(t, "list", "--label", "suite=list", "--page-token", token))
		if got := sorted(append(tableIDs(out), rest...)...); !slices.Equal(got, sorted(alice, bob, carol, dave)) {
			t.Errorf("two pages: %q", got)
		}

		out = c.ok(t, "-o", "json", "list", "--state", "dead", "--kind", "email", "--label", "suite=list")
		var resp taskdv1.ListTasksResponse
		if err := protojson.Unmarshal([]byte(out), &resp); err != nil || len(resp.GetTasks()) != 1 || resp.GetTasks()[0].GetId() != carol {
			t.Errorf("list -o json: %v, %v\n%s", &resp, err, out)
		}
	})

	t.Run("pause", func(t *testing.T) {
		id := c.scheduled(t, "--identity", "pause-a", "--kind", "echo", "--scope", "identity", "--every", "1h")
		other := c.scheduled(t, "--identity", "pause-b", "--kind", "email", "--scope", "identity", "--every", "1h")

		// One task.
		d := detail(c.ok(t, "pause", "--identity", "pause-a", id))
		if d["State"][0] != "PAUSED" || d["Paused"][0] != "yes (by task)" {
			t.Errorf("pause of a task printed %q", d)
		}
		c.waitState(t, "pause-a", id, taskdv1.TaskState_TASK_STATE_PAUSED)
		d = detail(c.ok(t, "resume", "--identity", "pause-a", "--task", id))
		if d["State"][0] != "SCHEDULED" || d["Paused"][0] != "no" {
			t.Errorf("resume of a task printed %q", d)
		}

		// An identity, then a kind: pauses lists both.
		if rows := tableLines(c.ok(t, "pause", "--identity", "pause-a")); len(rows) != 2 || rows[1][0] != "identity" || rows[1][1] != "pause-a" {
			t.Errorf("pause of an identity printed %q", rows)
		}
		if rows := tableLines(c.ok(t, "pause", "--kind", "email")); len(rows) != 2 || rows[1][0] != "kind" || rows[1][1] != "email" {
			t.Errorf("pause of a kind printed %q", rows)
		}
		rows := tableLines(c.ok(t, "pauses"))
		if len(rows) != 3 || rows[1][0] != "identity" || rows[1][1] != "pause-a" || rows[2][0] != "kind" || rows[2][1] != "email" {
			t.Errorf("pauses printed %q", rows)
		}
		if d := detail(c.ok(t, "get", "--identity", "pause-a", id)); d["Paused"][0] != "yes (by identity)" {
			t.Errorf("get of a task of a paused identity: Paused %q", d["Paused"])
		}
		if d := detail(c.ok(t, "get", "--identity", "pause-b", other)); d["Paused"][0] != "yes (by kind)" || d["State"][0] != "PAUSED" {
			t.Errorf("get of a task of a paused kind: Paused %q, State %q", d["Paused"], d["State"])
		}
		out := c.ok(t, "-o", "json", "pauses")
		var resp taskdv1.ListPausesResponse
		if err := protojson.Unmarshal([]byte(out), &resp); err != nil || len(resp.GetPauses()) != 2 || resp.GetPauses()[0].GetIdentity() != "pause-a" ||
			resp.GetPauses()[1].GetKind() != "email" || resp.GetPauses()[0].GetSince() == nil {
			t.Errorf("pauses -o json: %v, %v\n%s", &resp, err, out)
		}

		if out := c.ok(t, "resume", "--identity", "pause-a"); out != "identity pause-a resumed\n" {
			t.Errorf("resume of an identity printed %q", out)
		}
		if out := c.ok(t, "resume", "--kind", "email"); out != "kind email resumed\n" {
			t.Errorf("resume of a kind printed %q", out)
		}
		if rows := tableLines(c.ok(t, "pauses")); len(rows) != 1 {
			t.Errorf("pauses after the resumes: %q", rows)
		}
		c.waitState(t, "pause-b", other, taskdv1.TaskState_TASK_STATE_SCHEDULED)

		c.fails(t, []string{"pause", "--identity", "pause-a", "0000000000000000000000000z"}, "NotFound")
	})

	t.Run("preview", func(t *testing.T) {
		// The example of the issue: the next ten weekdays at 02:30 in Berlin.
		out := c.ok(t, "preview", "--cron", "0 30 2 ? * MON-FRI", "--tz", "Europe/Berlin", "-n", "10")
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) != 10 {
			t.Fatalf("preview printed %d lines, want 10:\n%s", len(lines), out)
		}
		var prev time.Time
		for _, l := range lines {
			f := strings.Split(l, "  ")
			if len(f) != 2 {
				t.Fatalf("line %q is not LOCAL  UTC", l)
			}
			local, err1 := time.Parse(time.RFC3339, f[0])
			utc, err2 := time.Parse(time.RFC3339, f[1])
			if err1 != nil || err2 != nil || !local.Equal(utc) || !strings.HasSuffix(f[1], "Z") || !local.After(prev) {
				t.Errorf("line %q: local and UTC are not the same instant in order (%v, %v)", l, err1, err2)
			}
			prev = local
			if b := local.In(berlin); b.Format(time.RFC3339) != f[0] || b.Hour() != 2 || b.Minute() != 30 || b.Weekday() == time.Saturday || b.Weekday() == time.Sunday {
				t.Errorf("line %q: not a weekday at 02:30 in Berlin's offset", l)
			}
		}

		// From a fixed instant, across the start of summer time (29 March
		// 2026 in Berlin).
		want := "2026-03-26T02:30:00+01:00  2026-03-26T01:30:00Z\n" +
			"2026-03-27T02:30:00+01:00  2026-03-27T01:30:00Z\n" +
			"2026-03-30T02:30:00+02:00  2026-03-30T00:30:00Z\n"
		if out := c.ok(t, "preview", "--cron", "0 30 2 ? * MON-FRI", "--tz", "Europe/Berlin", "--from", "2026-03-26T00:00:00Z", "-n", "3"); out != want {
			t.Errorf("preview across the change:\n%s\nwant\n%s", out, want)
		}
		out = c.ok(t, "-o", "json", "preview", "--cron", "0 30 2 ? * MON-FRI", "--tz", "Europe/Berlin", "--from", "2026-03-26T00:00:00Z", "-n", "3")
		var list []string
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("preview -o json: %v\n%s", err, out)
		}
		if want := []string{"2026-03-26T01:30:00Z", "2026-03-27T01:30:00Z", "2026-03-30T00:30:00Z"}; !slices.Equal(list, want) {
			t.Errorf("preview -o json: %q, want %q", list, want)
		}

		// Two triggers: the lines name the trigger.
		// (the periodic trigger comes first, then the cron).
		want = "2026-12-01T00:00:00Z  2026-12-01T00:00:00Z  trigger 0\n" +
			"2026-12-01T09:00:00+01:00  2026-12-01T08:00:00Z  trigger 1\n" +
			"2026-12-01T12:00:00Z  2026-12-01T12:00:00Z  trigger 0\n"
		if out := c.ok(t, "preview", "--cron", "0 0 9 * * ?", "--tz", "Europe/Berlin", "--every", "12h", "--start", "2026-12-01T00:00:00Z",
			"--from", "2026-12-01T00:00:00Z", "-n", "3"); out != want {
			t.Errorf("preview of two triggers:\n%s\nwant\n%s", out, want)
		}

		// An invalid expression: the server's message names the field and
		// the position.
		c.fails(t, []string{"preview", "--cron", "0 30 2 ? * MON-FRX", "--tz", "Europe/Berlin"},
			"taskctl: preview: InvalidArgument: triggers[0].cron.expression: ", "position")
		c.fails(t, []string{"preview", "--cron", "0 30 2 ? * MON-FRI", "--tz", "Europe/Nowhere"},
			"InvalidArgument: triggers[0].cron.time_zone")
	})

	t.Run("defaults in force", func(t *testing.T) { testDefaultsInForce(t, c) })
	t.Run("calendars", func(t *testing.T) { testCalendars(t, c) })
	t.Run("trigger add and remove, delete", func(t *testing.T) { testTriggersAndDelete(t, c) })
	// Last: it ends by compacting etcd's history.
	t.Run("events", func(t *testing.T) { testEvents(t, c) })
}

// racingClient calls afterGet between a GetTask and the caller's next call,
// as another client's change between this command's read and its write.
type racingClient struct {
	afterGet func(*taskdv1.Task)
}

// client is a client of addr whose GetTask calls read the task, then let
// afterGet change it. The command closes it.
func (c *racingClient) client(t *testing.T, addr string) *client.Client {
	t.Helper()
	cl, err := client.New(context.Background(), []string{addr}, client.WithLazyConnect(),
		client.WithDialOptions(grpc.WithUnaryInterceptor(c.intercept)))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// intercept runs a call, then afterGet after a GetTask.
func (c *racingClient) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoke(ctx, method, req, reply, cc, opts...)
	if resp, ok := reply.(*taskdv1.GetTaskResponse); ok && err == nil {
		c.afterGet(resp.GetTask())
	}
	return err
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

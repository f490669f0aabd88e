package console

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// etcd's client keeps a resolver goroutine per process.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
}

// The pages show what the API holds, and bad input is refused naming the
// field.
func TestPages(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	n := startNode(t, cli, "n1", true)
	every := n.schedule(t, "alice", time.Hour, map[string]string{"team": "core"})
	once := n.schedule(t, "bob", 0, nil)
	eventually(t, "bob's task completes", func() error {
		if s := n.task(t, "bob", once.GetId()).GetState(); s != taskdv1.TaskState_TASK_STATE_COMPLETED {
			return fmt.Errorf("state %s", s)
		}
		return nil
	})

	n.get(t, readToken, "/ui/").want(t, "cluster", 200, `data-node="n1"`, "this node", "RUNNING", `class="chart"`)
	n.get(t, readToken, "/ui/identities").want(t, "identities", 200, `data-identity="alice"`, `data-identity="bob"`)
	n.get(t, readToken, "/ui/identities?identity=alice").want(t, "identity", 200, `class="owner"`, "n1", `id="move-form"`)
	n.get(t, readToken, "/ui/tasks").want(t, "tasks", 200, every.GetId(), once.GetId(), "st-completed", "st-scheduled")
	p := n.get(t, readToken, "/ui/tasks?state=COMPLETED")
	p.want(t, "tasks by state", 200, once.GetId())
	if strings.Contains(p.body, every.GetId()) {
		t.Fatalf("the state filter kept a SCHEDULED task:\n%s", p.body)
	}
	p = n.get(t, readToken, "/ui/tasks?label=team%3Dcore")
	p.want(t, "tasks by label", 200, every.GetId())
	if strings.Contains(p.body, once.GetId()) {
		t.Fatalf("the label filter kept an unlabelled task:\n%s", p.body)
	}
	// Paging: one task a page, the next page's link carries the token.
	p = n.get(t, readToken, "/ui/tasks?page_size=1")
	p.want(t, "first page", 200, every.GetId(), `id="next-page"`)
	next := strings.Split(strings.Split(p.body, `<a href="`+Prefix+`tasks?`)[1], `"`)[0]
	n.get(t, readToken, "/ui/tasks?"+strings.ReplaceAll(next, "&amp;", "&")).want(t, "second page", 200, once.GetId(), "First page")

	n.get(t, readToken, "/ui/task?identity=bob&id="+once.GetId()).want(t, "task", 200,
		"payload of bob", `id="runs"`, `data-run="1"`, "st-success", "once", "<time datetime=", "<dd>FIRE_ONCE_NOW (default for once)</dd>")
	// The settings the task leaves unset show the node's values, marked.
	n.get(t, readToken, "/ui/task?identity=alice&id="+every.GetId()).want(t, "periodic task", 200, "every 1h0m0s", "team=core",
		"max attempts 25 (default), backoff 1s (default) to 10m0s (default), timeout 5m0s (default)",
		"<dd>SKIP (default for periodic)</dd>")
	if strings.Contains(n.get(t, readToken, "/ui/tasks").body, "tag waiting") {
		t.Fatal("the tasks page shows a waiting badge while no run waits")
	}

	// A run that waits for a worker has a badge in the list and on its
	// page, and its page says why.
	resp, err := n.api.ScheduleTask(as(callCtx(t), adminToken), &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{
		Identity: "carol", Kind: "later", Scope: taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}},
	}})
	if err != nil {
		t.Fatalf("ScheduleTask of a declared kind: %v", err)
	}
	later := resp.GetTask()
	eventually(t, "carol's run waits for a worker", func() error {
		if w := n.task(t, "carol", later.GetId()).GetWaiting(); w != "worker" {
			return fmt.Errorf("waiting %q", w)
		}
		return nil
	})
	reason := "(declared by --kinds) has connected to node n1; waiting since "
	n.get(t, readToken, "/ui/tasks").want(t, "tasks with a waiting run", 200, later.GetId(), `class="tag waiting"`, "waiting for a worker", reason)
	n.get(t, readToken, "/ui/task?identity=carol&id="+later.GetId()).want(t, "a waiting task", 200,
		`id="task-waiting"`, "waiting for a worker", `id="task-waiting-reason"`, reason, "st-scheduled")
	n.get(t, readToken, "/ui/events?type=started").want(t, "events", 200, `data-stream="/ui/events/stream?type=started"`)
	n.get(t, readToken, "/ui/static/console.js").want(t, "script", 200, "EventSource")

	for _, c := range []struct{ path, field string }{
		{"/ui/tasks?state=SLEEPING", "state: "},
		{"/ui/tasks?label=team", "label: "},
		{"/ui/tasks?page_size=5000", "page_size: "},
		{"/ui/tasks?page_token=not-a-token", "page_token: "},
		{"/ui/identities?page_token=not-a-token", "page_token: "},
		{"/ui/task?identity=alice", "id: is required"},
		{"/ui/events?type=EXPLODED", "type: "},
		{"/ui/events/stream?type=EXPLODED", "type: "},
	} {
		n.get(t, readToken, c.path).want(t, c.path, 400, c.field)
	}
	n.get(t, readToken, "/ui/task?identity=alice&id=01m8mx19rx1hj7mgnxe477btw0").want(t, "missing task", 404, "NotFound")
	n.get(t, readToken, "/ui/nope").want(t, "unknown page", 404, "no console page")
}

// The API's tokens decide for the console: without a token 401, without
// the verb or out of scope 403, and the refused action did not happen.
func TestAuthorisation(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	n := startNode(t, cli, "n1", true)
	task := n.schedule(t, "alice", time.Hour, nil)
	bobs := n.schedule(t, "bob", time.Hour, nil)

	n.get(t, "", "/ui/").want(t, "no token", 401, "Unauthenticated", `href="/ui/token"`)
	n.get(t, "nobody.wrong", "/ui/tasks").want(t, "unknown token", 401, "invalid bearer token")
	n.get(t, aliceToken, "/ui/tasks").want(t, "scoped token, whole cluster", 403, "PermissionDenied")
	n.get(t, aliceToken, "/ui/tasks?identity=alice").want(t, "scoped token, its identity", 200, task.GetId())
	n.get(t, aliceToken, "/ui/task?identity=bob&id="+bobs.GetId()).want(t, "scoped token, other identity", 403, "out of its scopes")
	n.get(t, "", "/ui/events/stream").want(t, "event stream without a token", 401, "Unauthenticated")
	n.get(t, aliceToken, "/ui/events/stream").want(t, "scoped token, whole cluster's events", 403, "PermissionDenied")

	cancelForm := url.Values{"op": {"cancel"}, "identity": {"alice"}, "task_id": {task.GetId()}, "confirm": {"yes"}}
	n.post(t, readToken, "/ui/action", cancelForm).want(t, "cancel with a read token", 403, "lacks the verb")
	n.post(t, aliceToken, "/ui/action", url.Values{"op": {"move"}, "identity": {"alice"}, "node": {"n1"}, "confirm": {"yes"}}).
		want(t, "move with a control token", 403, "admin")
	if s := n.task(t, "alice", task.GetId()).GetState(); s != taskdv1.TaskState_TASK_STATE_SCHEDULED {
		t.Fatalf("a refused cancel changed the task: %s", s)
	}

	// A token set on the token form travels in a cookie.
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := httpClient(jar)
	req, _ := http.NewRequest(http.MethodGet, n.web.URL+"/ui/token", nil)
	do(t, c, req).want(t, "token page", 200, `name="csrf"`)
	csrf := ""
	for _, ck := range jar.Cookies(req.URL) {
		if ck.Name == csrfCookie {
			csrf = ck.Value
		}
	}
	req, _ = http.NewRequest(http.MethodPost, n.web.URL+"/ui/token", strings.NewReader(url.Values{"token": {aliceToken}, "csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	p := do(t, c, req)
	if p.status != http.StatusSeeOther {
		t.Fatalf("token form: HTTP %d: %s", p.status, p.body)
	}
	if ck := p.header.Get("Set-Cookie"); !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "SameSite=Strict") {
		t.Fatalf("token cookie %q is not HttpOnly and SameSite=Strict", ck)
	}
	req, _ = http.NewRequest(http.MethodGet, n.web.URL+"/ui/tasks?identity=alice", nil)
	do(t, c, req).want(t, "cookie token", 200, task.GetId(), "token <b>alice</b>")

	// A form posted from another site's page is refused before any call.
	req, _ = http.NewRequest(http.MethodPost, n.web.URL+"/ui/action", strings.NewReader(cancelForm.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	do(t, httpClient(nil), req).want(t, "cross-site post", 403, "Origin")
	if s := n.task(t, "alice", task.GetId()).GetState(); s != taskdv1.TaskState_TASK_STATE_SCHEDULED {
		t.Fatalf("a cross-site cancel changed the task: %s", s)
	}
}

// Actions make their API call; destructive ones only after confirmation.
func TestActions(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	n := startNode(t, cli, "n1", true)
	task := n.schedule(t, "alice", time.Hour, nil)
	back := "/ui/task?identity=alice&id=" + task.GetId()
	form := func(op string, kv ...string) url.Values {
		v := url.Values{"op": {op}, "identity": {"alice"}, "task_id": {task.GetId()}, "back": {back}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}

	p := n.post(t, adminToken, "/ui/action", form("run-now"))
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), back+"&done=") {
		t.Fatalf("run-now: HTTP %d to %q", p.status, p.header.Get("Location"))
	}
	eventually(t, "the manual run", func() error {
		if rc := n.task(t, "alice", task.GetId()).GetRunCount(); rc < 1 {
			return fmt.Errorf("run_count %d", rc)
		}
		return nil
	})

	if p := n.post(t, adminToken, "/ui/action", form("pause-task")); p.status != http.StatusSeeOther {
		t.Fatalf("pause: HTTP %d: %s", p.status, p.body)
	}
	if !n.task(t, "alice", task.GetId()).GetPaused() {
		t.Fatal("pause did not pause the task")
	}
	n.get(t, adminToken, back+"&done=task+paused").want(t, "paused task", 200, `class="flash"`, "task paused", `id="resume"`, "paused by task")
	if p := n.post(t, adminToken, "/ui/action", form("resume-task")); p.status != http.StatusSeeOther {
		t.Fatalf("resume: HTTP %d: %s", p.status, p.body)
	}
	if n.task(t, "alice", task.GetId()).GetPaused() {
		t.Fatal("resume did not resume the task")
	}

	// An identity's pause shows on the cluster page until it is lifted.
	idForm := func(op string) url.Values {
		return url.Values{"op": {op}, "identity": {"alice"}, "back": {"/ui/identities?identity=alice"}}
	}
	if p := n.post(t, adminToken, "/ui/action", idForm("pause-identity")); p.status != http.StatusSeeOther {
		t.Fatalf("pause identity: HTTP %d: %s", p.status, p.body)
	}
	n.get(t, adminToken, "/ui/").want(t, "cluster page with a pause", 200, `<a href="/ui/identities?identity=alice">alice</a>`)
	if !n.task(t, "alice", task.GetId()).GetPaused() {
		t.Fatal("pausing the identity did not pause its task")
	}
	if p := n.post(t, adminToken, "/ui/action", idForm("resume-identity")); p.status != http.StatusSeeOther {
		t.Fatalf("resume identity: HTTP %d: %s", p.status, p.body)
	}
	if n.task(t, "alice", task.GetId()).GetPaused() {
		t.Fatal("resuming the identity left its task paused")
	}

	// Cancel asks first; the answer's form confirms.
	n.post(t, adminToken, "/ui/action", form("cancel")).want(t, "cancel, unconfirmed", 200, `name="confirm" value="yes"`, "cannot be undone")
	if s := n.task(t, "alice", task.GetId()).GetState(); s != taskdv1.TaskState_TASK_STATE_SCHEDULED {
		t.Fatalf("an unconfirmed cancel changed the task: %s", s)
	}
	if p := n.post(t, adminToken, "/ui/action", form("cancel", "confirm", "yes")); p.status != http.StatusSeeOther {
		t.Fatalf("cancel: HTTP %d: %s", p.status, p.body)
	}
	if s := n.task(t, "alice", task.GetId()).GetState(); s != taskdv1.TaskState_TASK_STATE_CANCELED {
		t.Fatalf("cancel: task is %s", s)
	}
	// A finished task can be deleted, after a confirmation.
	n.get(t, adminToken, back).want(t, "cancelled task", 200, `id="delete"`)
	n.post(t, adminToken, "/ui/action", form("delete")).want(t, "delete, unconfirmed", 200, `name="confirm" value="yes"`, "Delete task")
	if p := n.post(t, adminToken, "/ui/action", form("delete", "confirm", "yes", "back", "/ui/tasks?identity=alice")); p.status != http.StatusSeeOther {
		t.Fatalf("delete: HTTP %d: %s", p.status, p.body)
	}
	n.get(t, adminToken, back).want(t, "the deleted task", 404)

	n.post(t, adminToken, "/ui/action", url.Values{"op": {"drain"}, "node": {"n1"}}).want(t, "drain, unconfirmed", 200, "Drain node n1?")
	n.post(t, adminToken, "/ui/action", url.Values{"op": {"move"}, "identity": {"alice"}, "node": {"n1"}}).want(t, "move, unconfirmed", 200, "Move identity alice to node n1?")
	n.post(t, adminToken, "/ui/action", url.Values{"op": {"move"}, "identity": {"alice"}, "node": {"nowhere"}, "confirm": {"yes"}}).
		want(t, "move to an unknown node", 409, "Move identity", "FailedPrecondition")
	n.post(t, adminToken, "/ui/action", url.Values{"op": {"move"}, "identity": {"alice"}}).want(t, "move without node", 400, "node: is required")
	n.post(t, adminToken, "/ui/action", url.Values{"op": {"explode"}}).want(t, "unknown action", 400, "op: ")
	// A crafted "back" cannot send the viewer off the console.
	other := n.schedule(t, "alice", time.Hour, nil)
	p = n.post(t, adminToken, "/ui/action", form("run-now", "task_id", other.GetId(), "back", "https://evil.example/"))
	if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || !strings.HasPrefix(loc, Prefix) {
		t.Fatalf("HTTP %d, redirect to %q", p.status, loc)
	}
}

// The live-event stream carries the cluster's events as server-sent
// events, filtered, with their cursors as ids.
func TestEventStream(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	n := startNode(t, cli, "n1", true)
	// A stream begins at "now" once the node's watch is set up, which the
	// viewer cannot see; a periodic task's events show when it is.
	n.schedule(t, "zed", 20*time.Millisecond, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp := n.openStream(ctx, t, readToken, "?type=scheduled,succeeded")
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("stream: HTTP %d, %s", resp.StatusCode, ct)
	}
	next := liveEvents(t, resp.Body)
	if ev, _ := next(); ev.Identity != "zed" || ev.Type != "SUCCEEDED" {
		t.Fatalf("first event %+v, want a SUCCEEDED of zed", ev)
	}
	task := n.schedule(t, "carol", 0, nil)
	var types []string
	for len(types) < 2 {
		ev, _ := next()
		if ev.Type != "SCHEDULED" && ev.Type != "SUCCEEDED" {
			t.Fatalf("event %+v passed the type filter", ev)
		}
		if ev.Identity == "carol" {
			if ev.TaskID != task.GetId() || ev.Time == "" || ev.Type == "SUCCEEDED" && (ev.Node != "n1" || ev.Outcome != "SUCCESS") {
				t.Fatalf("carol's event %+v", ev)
			}
			types = append(types, ev.Type)
		}
	}
	if strings.Join(types, ",") != "SCHEDULED,SUCCEEDED" {
		t.Fatalf("carol's events %v, want SCHEDULED then SUCCEEDED", types)
	}
}

// Closing the console ends the live-event streams it serves.
func TestCloseEndsStreams(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	n := startNode(t, cli, "n1", false)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp := n.openStream(ctx, t, "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("stream: HTTP %d", resp.StatusCode)
	}
	n.console.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("the stream did not end cleanly: %v", err)
	}
}

// The chart counts this node's runs with their fire lag (from RunStarted) and
// other nodes' runs with theirs (from the cluster's event stream, whose
// STARTED events carry the fire time).
func TestChartFeed(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	n1 := startNode(t, cli, "n1", false)
	n2 := startNode(t, cli, "n2", false)
	n1.schedule(t, "erin", 20*time.Millisecond, nil)
	n1.schedule(t, "frank", 20*time.Millisecond, nil)
	for identity, node := range map[string]string{"erin": "n1", "frank": "n2"} {
		resp, err := n1.api.GetIdentity(callCtx(t), &taskdv1.GetIdentityRequest{Identity: identity})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetIdentity().GetNode() != node {
			if _, err := n1.api.MoveIdentity(callCtx(t), &taskdv1.MoveIdentityRequest{Identity: identity, ToNode: node}); err != nil {
				t.Fatalf("move %s to %s: %v", identity, node, err)
			}
		}
	}
	eventually(t, "n1's chart holds both nodes' runs, n1's with fire lag", func() error {
		got := map[string]series{}
		for _, s := range n1.console.chart.snapshot() {
			got[s.Node] = s
		}
		if s := got["n1"]; s.Runs < 3 || s.Lagged < 3 {
			return fmt.Errorf("n1: %d runs, %d with lag", s.Runs, s.Lagged)
		}
		if s := got["n2"]; s.Runs < 3 || s.Lagged < 3 {
			return fmt.Errorf("n2: %d runs, %d with lag (from the events' fire times)", s.Runs, s.Lagged)
		}
		return nil
	})
	if n2.started.Load() == 0 {
		t.Fatal("n2 ran nothing")
	}
	n1.get(t, "", "/ui/").want(t, "cluster page", 200, `<rect class="bar"`, `class="p99"`, `data-node="n2"`,
		`class="tag leader"`, "Lease left")
}

// The ring keeps an hour by minute, drops what is older, and bounds the
// lags it keeps.
func TestChartRing(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 30, 30, 0, time.UTC)
	clock := func() time.Time { return now }
	c := newChart(clock)
	for i := range 100 {
		c.add("a", now, time.Duration(i+1)*time.Millisecond)
	}
	for range 5000 {
		c.add("a", now.Add(-time.Minute), 7*time.Millisecond)
	}
	c.add("a", now.Add(-2*time.Minute), -1)           // a run without a fire time
	c.add("a", now.Add(-time.Hour), time.Millisecond) // too old
	c.add("", now, time.Millisecond)                  // no node
	s := c.snapshot()
	if len(s) != 1 || s[0].Node != "a" || len(s[0].Points) != chartMinutes {
		t.Fatalf("snapshot %+v", s)
	}
	last := s[0].Points[chartMinutes-1]
	if last.Runs != 100 || last.P50 != 50*time.Millisecond || last.P99 != 99*time.Millisecond || last.Max != 100*time.Millisecond {
		t.Fatalf("this minute: %+v", last)
	}
	if !last.Minute.Equal(time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)) {
		t.Fatalf("this minute starts %s", last.Minute)
	}
	prev := s[0].Points[chartMinutes-2]
	if prev.Runs != 5000 || prev.P99 != 7*time.Millisecond {
		t.Fatalf("the minute before: %+v", prev)
	}
	c.mu.Lock()
	kept := len(c.nodes["a"][(now.Unix()/60-1)%chartMinutes].lags)
	c.mu.Unlock()
	if kept != lagSamples {
		t.Fatalf("%d lags kept for 5000 runs, want %d", kept, lagSamples)
	}
	if p := s[0].Points[chartMinutes-3]; p.Runs != 1 || p.Lagged != 0 {
		t.Fatalf("two minutes ago: %+v", p)
	}
	if s[0].Runs != 5101 {
		t.Fatalf("hour: %d runs", s[0].Runs)
	}
	// An hour on, the ring has forgotten all of it.
	now = now.Add(time.Hour)
	s = c.snapshot()
	if s[0].Runs != 0 {
		t.Fatalf("an hour later: %d runs", s[0].Runs)
	}
	ch := draw(s[0])
	if len(ch.Bars) != 0 || ch.P50 != "" || len(ch.Ticks) == 0 {
		t.Fatalf("empty chart drawn with %d bars, p50 %q, %d ticks", len(ch.Bars), ch.P50, len(ch.Ticks))
	}
}

func TestRelative(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "now"}, {-3 * time.Second, "3 s ago"}, {2*time.Minute + 5*time.Second, "in 2 min"},
		{-5 * time.Hour, "5 h ago"}, {72 * time.Hour, "in 3 d"},
	} {
		if got := relative(now.Add(c.d), now); got != c.want {
			t.Errorf("relative(%s) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestLoopbackTarget(t *testing.T) {
	for addr, want := range map[string]string{
		"0.0.0.0:7420":   "127.0.0.1:7420",
		"[::]:7420":      "127.0.0.1:7420",
		"10.1.2.3:7420":  "10.1.2.3:7420",
		"127.0.0.1:7420": "127.0.0.1:7420",
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := LoopbackTarget(a); got != want {
			t.Errorf("LoopbackTarget(%s) = %s, want %s", addr, got, want)
		}
	}
}

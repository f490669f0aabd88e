package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The tests of this file attack a real taskd's HTTP port with real HTTP
// requests, as the report of issue 20 did: an open console on a public
// --http, a form posted by another site, a DNS-rebinding page.

// answer is one HTTP answer.
type answer struct {
	status int
	body   string
	header http.Header
}

// want fails unless the answer has status and holds every string of has.
func (a answer) want(t *testing.T, what string, status int, has ...string) answer {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: HTTP %d, want %d; body:\n%s", what, a.status, status, a.body)
	}
	for _, s := range has {
		if !strings.Contains(a.body, s) {
			t.Fatalf("%s: the answer does not hold %q; body:\n%s", what, s, a.body)
		}
	}
	return a
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so a test sees the console's 303 after an action.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// send makes one request to base+path: a POST of form when form is not
// nil, else a GET. header may set "Host", which goes in the request's Host.
func send(t *testing.T, c *http.Client, base, path string, form url.Values, header map[string]string) answer {
	t.Helper()
	method, body := http.MethodGet, io.Reader(nil)
	if form != nil {
		method, body = http.MethodPost, strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, body: string(b), header: resp.Header}
}

// reach is the http:// base URL at which this machine reaches a listener
// bound to addr (loopback for a wildcard).
func reach(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

var csrfFieldRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf returns the CSRF token in the forms of a console page.
func csrfOf(t *testing.T, page answer) string {
	t.Helper()
	m := csrfFieldRE.FindStringSubmatch(page.body)
	if m == nil {
		t.Fatalf("no csrf field in the page:\n%s", page.body)
	}
	return m[1]
}

// api dials d's gRPC API.
func (d *taskd) apiClient(t *testing.T) taskdv1.TaskServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(d.api, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return taskdv1.NewTaskServiceClient(conn)
}

// scheduleFor stores an hourly task of identity, so that the console
// shows the identity.
func scheduleFor(t *testing.T, api taskdv1.TaskServiceClient, ctx context.Context, identity string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := api.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{Identity: identity, Kind: "k", Scope: taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(time.Hour)}}}}}})
	if err != nil {
		t.Fatalf("ScheduleTask %s: %v", identity, err)
	}
}

// pauses returns the identities paused, as the API says.
func pauses(t *testing.T, api taskdv1.TaskServiceClient) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := api.ListPauses(ctx, &taskdv1.ListPausesRequest{})
	if err != nil {
		t.Fatalf("ListPauses: %v", err)
	}
	var ids []string
	for _, p := range resp.GetPauses() {
		ids = append(ids, p.GetIdentity())
	}
	return ids
}

// nodeState returns the state of node name, as the API says.
func nodeState(t *testing.T, api taskdv1.TaskServiceClient, name string) taskdv1.NodeState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := api.ListNodes(ctx, &taskdv1.ListNodesRequest{})
	if err != nil {
		t.Fatalf("ListNodes: %v", err)
	}
	for _, n := range resp.GetNodes() {
		if n.GetName() == name {
			return n.GetState()
		}
	}
	return taskdv1.NodeState_NODE_STATE_UNSPECIFIED
}

// refused waits for a taskd launched with args to exit, and fails unless it
// exited 1 with a log naming every string of names.
func refused(t *testing.T, names []string, args ...string) {
	t.Helper()
	d := launchTaskd(t, args...)
	select {
	case <-d.exited:
	case <-d.log.when(runningRE, d.exited):
		select {
		case <-d.exited: // it stopped by itself as it logged
		default:
			d.stop()
			<-d.exited
			t.Fatalf("taskd %v started; want it refused", args)
		}
	case <-time.After(time.Minute):
		d.stop()
		<-d.exited
		t.Fatalf("taskd %v neither started nor stopped within a minute", args)
	}
	for _, n := range names {
		if d.code != 1 || !strings.Contains(d.log.String(), n) {
			t.Fatalf("taskd %v: exit %d, log:\n%s\nwant exit 1 naming %q", args, d.code, d.log, n)
		}
	}
}

// TestHTTPPolicy: the console and pprof obey the rule of --listen. A
// non-loopback --http serving either, without --tokens-file or --insecure,
// is refused at start-up naming the options; with --insecure it starts;
// with --console=false (and no --pprof) it serves /metrics and /healthz
// there, and /ui/ is not found.
func TestHTTPPolicy(t *testing.T) {
	refused(t, []string{"--http 0.0.0.0:0", "the console", "--tokens-file", "--insecure", "--console=false"}, "--http", "0.0.0.0:0")
	refused(t, []string{"--http [::]:0", "pprof", "--tokens-file", "--insecure"}, "--http", "[::]:0", "--console=false", "--pprof")
	refused(t, []string{"--http :0", "the console and pprof"}, "--http", ":0", "--pprof")

	open := startTaskd(t, "--http", "0.0.0.0:0", "--insecure")
	send(t, browser(t), reach(open.http), "/ui/", nil, nil).want(t, "console with --insecure", http.StatusOK, `data-node=`)

	quiet := startTaskd(t, "--http", "0.0.0.0:0", "--console=false")
	base, c := reach(quiet.http), browser(t)
	send(t, c, base, "/ui/", nil, nil).want(t, "console with --console=false", http.StatusNotFound)
	send(t, c, base, "/ui/action", url.Values{"op": {"drain"}, "node": {"x"}, "confirm": {"yes"}}, nil).want(t, "action with --console=false", http.StatusNotFound)
	send(t, c, base, "/", nil, nil).want(t, "root with --console=false", http.StatusNotFound)
	send(t, c, base, "/metrics", nil, nil).want(t, "metrics with --console=false", http.StatusOK, "taskd_")
	waitUntil(t, "/healthz serves", func() bool { return send(t, c, base, "/healthz", nil, nil).status == http.StatusOK })
}

// TestConsoleCSRF: on a node with the API open (no tokens, the default), a
// form posted without the CSRF token of the viewer's page is refused (403)
// and changes nothing (the report's drain of a node and pause of an
// identity); the console's own form, with the token, acts.
func TestConsoleCSRF(t *testing.T) {
	d := startTaskd(t, "--name", "csrf-1", "--exec", "k=true")
	api := d.apiClient(t)
	scheduleFor(t, api, context.Background(), "alice")
	base := reach(d.http)

	// Another site's form: the browser posts it with no token.
	attacker := browser(t)
	send(t, attacker, base, "/ui/action", url.Values{"op": {"drain"}, "node": {"csrf-1"}, "confirm": {"yes"}}, nil).
		want(t, "drain without a CSRF token", http.StatusForbidden, "csrf")
	send(t, attacker, base, "/ui/action", url.Values{"op": {"pause-identity"}, "identity": {"alice"}}, nil).
		want(t, "pause without a CSRF token", http.StatusForbidden, "csrf")

	// The viewer's browser holds the cookie of a page; a post with the
	// cookie but without the page's field is refused too.
	viewer := browser(t)
	page := send(t, viewer, base, "/ui/identities?identity=alice", nil, nil).want(t, "identity page", http.StatusOK, "Pause identity")
	send(t, viewer, base, "/ui/action", url.Values{"op": {"pause-identity"}, "identity": {"alice"}}, nil).
		want(t, "pause with the cookie, without the field", http.StatusForbidden, "csrf")
	send(t, viewer, base, "/ui/action", url.Values{"op": {"pause-identity"}, "identity": {"alice"}, "csrf": {"guessed"}}, nil).
		want(t, "pause with a wrong token", http.StatusForbidden, "csrf")
	send(t, viewer, base, "/ui/token", url.Values{"token": {"attacker.secret"}}, nil).
		want(t, "token form without the field", http.StatusForbidden, "csrf")
	if p := pauses(t, api); len(p) != 0 {
		t.Fatalf("refused posts paused %v", p)
	}
	if s := nodeState(t, api, "csrf-1"); s != taskdv1.NodeState_NODE_STATE_RUNNING {
		t.Fatalf("after a refused drain the node is %s", s)
	}

	tok := csrfOf(t, page)
	send(t, viewer, base, "/ui/action", url.Values{"op": {"pause-identity"}, "identity": {"alice"}, "csrf": {tok}, "back": {"/ui/"}}, nil).
		want(t, "the page's own form", http.StatusSeeOther)
	if p := pauses(t, api); len(p) != 1 || p[0] != "alice" {
		t.Fatalf("the console's pause: pauses %v, want [alice]", p)
	}
	// A destructive action's confirmation step carries the token on.
	confirm := send(t, viewer, base, "/ui/action", url.Values{"op": {"drain"}, "node": {"csrf-1"}, "csrf": {tok}}, nil).
		want(t, "drain, unconfirmed", http.StatusOK, "Drain node csrf-1?")
	if csrfOf(t, confirm) != tok {
		t.Fatal("the confirmation form does not carry the viewer's token")
	}
}

// TestConsoleHostCheck: a DNS-rebinding page (Host: evil.example:PORT with
// a matching Origin, even holding a valid CSRF token) gets 421 from every
// console path and pprof, and changes nothing; a name given with
// --console-host is served, with its Origin.
func TestConsoleHostCheck(t *testing.T) {
	d := startTaskd(t, "--name", "host-1", "--exec", "k=true", "--pprof", "--console-host", "taskd.test, proxy.test:8443")
	api := d.apiClient(t)
	scheduleFor(t, api, context.Background(), "alice")
	base := reach(d.http)
	_, port, _ := net.SplitHostPort(d.http)
	evil := map[string]string{"Host": "evil.example:" + port, "Origin": "http://evil.example:" + port}

	for _, path := range []string{"/ui/", "/ui/identities?identity=alice", "/ui/events/stream", "/ui/static/console.js", "/debug/pprof/", "/debug/pprof/cmdline"} {
		a := send(t, browser(t), base, path, nil, evil).want(t, "rebinding GET "+path, http.StatusMisdirectedRequest, "evil.example", "--console-host")
		if ck := a.header.Get("Set-Cookie"); ck != "" {
			t.Fatalf("rebinding GET %s set a cookie %q", path, ck)
		}
	}
	// A token of the real console does not help the rebinding page.
	viewer := browser(t)
	tok := csrfOf(t, send(t, viewer, base, "/ui/", nil, nil).want(t, "cluster page", http.StatusOK))
	send(t, viewer, base, "/ui/action", url.Values{"op": {"pause-identity"}, "identity": {"alice"}, "csrf": {tok}}, evil).
		want(t, "rebinding pause", http.StatusMisdirectedRequest)
	send(t, viewer, base, "/ui/action", url.Values{"op": {"drain"}, "node": {"host-1"}, "confirm": {"yes"}, "csrf": {tok}}, evil).
		want(t, "rebinding drain", http.StatusMisdirectedRequest)
	// Nor does an Origin of another page of this host.
	send(t, viewer, base, "/ui/action", url.Values{"op": {"pause-identity"}, "identity": {"alice"}, "csrf": {tok}},
		map[string]string{"Origin": "http://127.0.0.1:1"}).want(t, "another port's page", http.StatusForbidden, "Origin")
	if p := pauses(t, api); len(p) != 0 {
		t.Fatalf("refused posts paused %v", p)
	}
	if s := nodeState(t, api, "host-1"); s != taskdv1.NodeState_NODE_STATE_RUNNING {
		t.Fatalf("after a refused drain the node is %s", s)
	}
	send(t, browser(t), base, "/debug/pprof/cmdline", nil, nil).want(t, "pprof under the node's address", http.StatusOK)

	// --console-host: the name, with any port, and a name:port entry.
	named := map[string]string{"Host": "taskd.test:" + port, "Origin": "http://taskd.test:" + port}
	proxied := browser(t)
	tok = csrfOf(t, send(t, proxied, base, "/ui/identities?identity=alice", nil, named).want(t, "console under --console-host", http.StatusOK))
	send(t, proxied, base, "/ui/action", url.Values{"op": {"pause-identity"}, "identity": {"alice"}, "csrf": {tok}}, named).
		want(t, "pause under --console-host", http.StatusSeeOther)
	if p := pauses(t, api); len(p) != 1 || p[0] != "alice" {
		t.Fatalf("the pause under --console-host: pauses %v, want [alice]", p)
	}
	send(t, browser(t), base, "/ui/", nil, map[string]string{"Host": "proxy.test:8443"}).want(t, "a name:port entry", http.StatusOK)
	send(t, browser(t), base, "/ui/", nil, map[string]string{"Host": "proxy.test:" + port}).want(t, "a name:port entry, other port", http.StatusMisdirectedRequest)
	send(t, browser(t), base, "/debug/pprof/cmdline", nil, named).want(t, "pprof under --console-host", http.StatusOK)
	send(t, browser(t), base, "/ui/", nil, map[string]string{"Host": "other.test:" + port}).want(t, "a name not given", http.StatusMisdirectedRequest)
	// /metrics and /healthz are for scrapers, under any name.
	send(t, browser(t), base, "/metrics", nil, evil).want(t, "metrics under any name", http.StatusOK, "taskd_")
}

var metricsRE = regexp.MustCompile(`taskd running: .* metrics=(\S+)`)

// TestMetricsListen: --metrics-listen serves /metrics and /healthz apart,
// and neither the console nor pprof; --http then serves the console and
// pprof, and not the metrics. A public --metrics-listen needs no tokens.
func TestMetricsListen(t *testing.T) {
	d := startTaskd(t, "--metrics-listen", "0.0.0.0:0", "--pprof")
	m := metricsRE.FindStringSubmatch(d.log.String())
	if m == nil || m[1] == d.http {
		t.Fatalf("no metrics address apart from --http %s in the log:\n%s", d.http, d.log)
	}
	metrics, console, c := reach(m[1]), reach(d.http), browser(t)
	send(t, c, metrics, "/metrics", nil, nil).want(t, "metrics apart", http.StatusOK, "taskd_")
	waitUntil(t, "/healthz serves apart", func() bool { return send(t, c, metrics, "/healthz", nil, nil).status == http.StatusOK })
	for _, path := range []string{"/ui/", "/", "/debug/pprof/"} {
		send(t, c, metrics, path, nil, nil).want(t, path+" on --metrics-listen", http.StatusNotFound)
	}
	// `taskd health` asks /healthz where it is: TASKD_METRICS_LISTEN first.
	var out, errOut strings.Builder
	env := []string{"TASKD_HTTP=" + d.http, "TASKD_METRICS_LISTEN=" + m[1]}
	if code := run(context.Background(), []string{"health"}, env, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "SERVING") {
		t.Fatalf("taskd health with %v: exit %d, stdout %q, stderr %q", env, code, out.String(), errOut.String())
	}
	send(t, c, console, "/ui/", nil, nil).want(t, "console on --http", http.StatusOK, `data-node=`)
	send(t, c, console, "/debug/pprof/cmdline", nil, nil).want(t, "pprof on --http", http.StatusOK)
	for _, path := range []string{"/metrics", "/healthz"} {
		send(t, c, console, path, nil, nil).want(t, path+" on --http", http.StatusNotFound)
	}
}

// TestPprofTokens: with --tokens-file a public --http serving the console
// and pprof starts; the console forwards the viewer's token to the API,
// and pprof (the node's memory) needs an unscoped token with the verb
// admin.
func TestPprofTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, file,
		tokenLine("root", "root-secret", "read,control,admin", ""),
		tokenLine("scoped", "scoped-secret", "read,admin", "alice"),
		tokenLine("reader", "reader-secret", "read", ""))
	d := startTaskd(t, "--http", "0.0.0.0:0", "--pprof", "--tokens-file", file)
	base, c := reach(d.http), browser(t)
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	send(t, c, base, "/debug/pprof/cmdline", nil, nil).want(t, "pprof without a token", http.StatusUnauthorized, "bearer token")
	send(t, c, base, "/debug/pprof/cmdline", nil, bearer("root.wrong")).want(t, "pprof with a wrong secret", http.StatusUnauthorized)
	send(t, c, base, "/debug/pprof/cmdline", nil, bearer("reader.reader-secret")).want(t, "pprof with a read token", http.StatusForbidden, "admin")
	send(t, c, base, "/debug/pprof/cmdline", nil, bearer("scoped.scoped-secret")).want(t, "pprof with a scoped token", http.StatusForbidden, "unscoped")
	send(t, c, base, "/debug/pprof/cmdline", nil, bearer("root.root-secret")).want(t, "pprof with an admin token", http.StatusOK)
	send(t, c, base, "/ui/", nil, nil).want(t, "console without a token", http.StatusUnauthorized, "Unauthenticated")
	send(t, c, base, "/ui/", nil, bearer("reader.reader-secret")).want(t, "console with a read token", http.StatusOK, `data-node=`)

	// The console's actions with a token need its CSRF token too.
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer root.root-secret")
	api := d.apiClient(t)
	send(t, c, base, "/ui/action", url.Values{"op": {"pause-identity"}, "identity": {"alice"}}, bearer("root.root-secret")).
		want(t, "pause with a token, without CSRF", http.StatusForbidden, "csrf")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := api.ListPauses(cctx, &taskdv1.ListPausesRequest{})
	if err != nil || len(resp.GetPauses()) != 0 {
		t.Fatalf("ListPauses: %v %v, want none", resp.GetPauses(), err)
	}
}

package console

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/internal/grpcapi"
	"github.com/taskd/taskd/pkg/taskservice"
	"github.com/taskd/taskd/pkg/tokens"
	"github.com/taskd/taskd/pkg/workers"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// wait bounds every wait on a condition in these tests.
const wait = 30 * time.Second

// Bearer tokens of the authorised test node, by what they may do.
const (
	adminToken = "admin.s3cret-admin"
	readToken  = "reader.s3cret-read"
	aliceToken = "alice.s3cret-alice" // read and control, alice only
)

// tokensFile lists the tokens above as a --tokens-file would.
func tokensFile() string {
	line := func(tok, verbs, scopes string) string {
		id, secret, _ := strings.Cut(tok, ".")
		sum := sha256.Sum256([]byte(secret))
		return strings.TrimSpace(fmt.Sprintf("%s %s %s %s", id, hex.EncodeToString(sum[:]), verbs, scopes)) + "\n"
	}
	return line(adminToken, "schedule,read,control,admin", "") + line(readToken, "read", "") + line(aliceToken, "read,control", "alice")
}

// testNode is a real node with its API on loopback (with the tokens of
// tokensFile checked when authorised) and its console behind an
// httptest server.
type testNode struct {
	node    *taskservice.Node
	api     taskdv1.TaskServiceClient
	console *Console
	web     *httptest.Server
	started atomic.Int64 // runs of the "work" kind
}

// startNode starts node name over cli. The console's chart feed runs
// until the test ends.
func startNode(t *testing.T, cli *clientv3.Client, name string, authorised bool) *testNode {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tn := &testNode{}
	c, err := New(Config{Node: name, Target: LoopbackTarget(lis.Addr()), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	tn.console = c
	// Remote workers may serve "later", declared before any connects (none
	// does): its runs wait for one.
	pool, err := workers.New(workers.Config{Node: name})
	if err != nil {
		t.Fatal(err)
	}
	node, err := taskservice.New(taskservice.Config{
		Name: name, Client: cli, Address: lis.Addr().String(),
		Remote: pool, DeclaredKinds: []string{"later"},
		Handlers: map[string]taskservice.Handler{"work": taskservice.HandlerFunc(func(_ context.Context, r *taskservice.Run) error {
			tn.started.Add(1)
			return nil
		})},
		Listeners: []taskservice.Listener{func(ev taskservice.Event) {
			if ev.Type == taskservice.EventStarted {
				c.RunStarted(ev.Node, ev.Time, ev.FireTime)
			}
		}},
		Logger:   hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Warn, Output: io.Discard}),
		LeaseTTL: 2 * time.Second, HandoffPeriod: 50 * time.Millisecond, HandoffStart: -1, VoteDelay: -1, RemoveDelay: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	tn.node = node
	var opts []grpc.ServerOption
	if authorised {
		toks, err := tokens.ParseFile(tokensFile())
		if err != nil {
			t.Fatal(err)
		}
		opts = tokens.NewAuthorizer(toks, nil).ServerOptions()
	}
	gs := grpc.NewServer(opts...)
	taskdv1.RegisterTaskServiceServer(gs, grpcapi.NewTaskService(node))
	served := make(chan struct{})
	go func() { defer close(served); _ = gs.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	tn.api = taskdv1.NewTaskServiceClient(conn)
	web := httptest.NewServer(c)
	tn.web = web
	feedCtx, stopFeed := context.WithCancel(context.Background())
	fed := make(chan struct{})
	go func() { defer close(fed); c.Run(feedCtx) }()
	t.Cleanup(func() {
		stopFeed()
		<-fed
		c.Close()
		web.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = node.Stop(ctx)
		pool.Close()
		_ = conn.Close()
		gs.Stop()
		<-served
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := node.Start(ctx); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	return tn
}

// as returns ctx carrying tok for a direct API call.
func as(ctx context.Context, tok string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// schedule stores a "work" task of identity firing every interval (0: once, now).
func (tn *testNode) schedule(t *testing.T, identity string, interval time.Duration, labels map[string]string) *taskdv1.Task {
	t.Helper()
	tr := &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}
	if interval > 0 {
		tr = &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(interval)}}}
	}
	resp, err := tn.api.ScheduleTask(as(callCtx(t), adminToken), &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{
		Identity: identity, Kind: "work", Scope: taskdv1.Scope_SCOPE_IDENTITY, Triggers: []*taskdv1.Trigger{tr},
		Labels: labels, Payload: []byte("payload of " + identity),
	}})
	if err != nil {
		t.Fatalf("ScheduleTask %s: %v", identity, err)
	}
	return resp.GetTask()
}

func (tn *testNode) task(t *testing.T, identity, id string) *taskdv1.Task {
	t.Helper()
	resp, err := tn.api.GetTask(as(callCtx(t), adminToken), &taskdv1.GetTaskRequest{Identity: identity, TaskId: id})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	return resp.GetTask()
}

// page is one answer of the console.
type page struct {
	status int
	body   string
	header http.Header
}

// httpClient is an HTTP client that does not follow redirects, so a test sees
// the console's 303 after an action.
func httpClient(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, Timeout: wait, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// get fetches path with tok ("" for none) in the Authorization header.
func (tn *testNode) get(t *testing.T, tok, path string) page {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, tn.web.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return do(t, httpClient(nil), req)
}

// csrfCookieOf returns the CSRF cookie the console sets on a page it
// draws (the token page, which makes no API call).
func (tn *testNode) csrfCookieOf(t *testing.T) *http.Cookie {
	t.Helper()
	p := tn.get(t, "", "/ui/token")
	for _, ck := range (&http.Response{Header: p.header}).Cookies() {
		if ck.Name == csrfCookie {
			return ck
		}
	}
	t.Fatalf("the token page set no %s cookie: %v", csrfCookie, p.header)
	return nil
}

// post submits a form to path with tok, as the console's own form: with
// the CSRF cookie of a page and the token in the csrf field (unless the
// form has that field already).
func (tn *testNode) post(t *testing.T, tok, path string, form url.Values) page {
	t.Helper()
	ck := tn.csrfCookieOf(t)
	if _, ok := form[csrfField]; !ok {
		form = maps.Clone(form)
		form.Set(csrfField, ck.Value)
	}
	req, err := http.NewRequest(http.MethodPost, tn.web.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(ck)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return do(t, httpClient(nil), req)
}

func do(t *testing.T, c *http.Client, req *http.Request) page {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{status: resp.StatusCode, body: string(b), header: resp.Header}
}

// want fails unless the page has status and holds every string of has.
func (p page) want(t *testing.T, what string, status int, has ...string) {
	t.Helper()
	if p.status != status {
		t.Fatalf("%s: HTTP %d, want %d; body:\n%s", what, p.status, status, p.body)
	}
	for _, s := range has {
		if !strings.Contains(p.body, s) {
			t.Fatalf("%s: page does not hold %q; body:\n%s", what, s, p.body)
		}
	}
}

// eventually polls cond until it holds or wait passes.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, wait, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openStream opens the live-event stream at query (its "?…" part, or "")
// with tok, under ctx, failing the test unless it is served; the body
// closes when the test ends.
func (tn *testNode) openStream(ctx context.Context, t *testing.T, tok, query string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tn.web.URL+"/ui/events/stream"+query, nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// liveEvents reads the live events of a stream's body: next returns the
// next event and its id, failing the test on an event without one, or if
// the stream ends.
func liveEvents(t *testing.T, body io.Reader) (next func() (liveEvent, string)) {
	sc := bufio.NewScanner(body)
	return func() (liveEvent, string) {
		t.Helper()
		id := ""
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				id = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				var ev liveEvent
				if err := json.Unmarshal([]byte(v), &ev); err != nil {
					t.Fatalf("event %q: %v", v, err)
				}
				if id == "" {
					t.Fatalf("event %q without an id line", v)
				}
				return ev, id
			}
		}
		t.Fatalf("the stream ended: %v", sc.Err())
		return liveEvent{}, ""
	}
}

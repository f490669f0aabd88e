package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// streamWait bounds each wait for a stream to end in these tests: a stream
// that revocation does not end fails the test with DeadlineExceeded.
const streamWait = 30 * time.Second

// revokeNode is a taskd with a tokens file, and clients of its services.
type revokeNode struct {
	d      *taskd
	file   string
	tasks  taskdv1.TaskServiceClient
	toks   taskdv1.TokenServiceClient
	work   taskdv1.WorkerServiceClient
	rootTk string
}

func startRevokeNode(t *testing.T, name string, lines ...string) *revokeNode {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, file, lines...)
	// Workers here send no heartbeats: none is cut off for silence.
	d := startTaskd(t, "--name", name, "--tokens-file", file, "--worker-heartbeat", "1m")
	conn, err := grpc.NewClient(d.api, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &revokeNode{d: d, file: file, tasks: taskdv1.NewTaskServiceClient(conn), toks: taskdv1.NewTokenServiceClient(conn),
		work: taskdv1.NewWorkerServiceClient(conn)}
}

// bearer returns a context of the test carrying token, ending after
// streamWait.
func bearer(t *testing.T, token string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), streamWait)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// schedule stores a task of identity and kind, due at once when now is
// set, else in a day; it returns its id. The node takes a kind once it
// knows a worker serves it: until then it retries.
func (n *revokeNode) schedule(t *testing.T, identity, kind string, now bool) string {
	t.Helper()
	at := time.Now().Add(24 * time.Hour)
	if now {
		at = time.Now()
	}
	var id string
	waitUntil(t, "schedule "+identity, func() bool {
		resp, err := n.tasks.ScheduleTask(bearer(t, n.rootTk), &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{
			Identity: identity, Kind: kind, Scope: taskdv1.Scope_SCOPE_IDENTITY,
			Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: timestamppb.New(at)}}}},
		}})
		if status.Code(err) == codes.InvalidArgument && strings.Contains(err.Error(), "no node of the cluster handles") {
			return false
		}
		if err != nil {
			t.Fatalf("schedule %s: %v", identity, err)
		}
		id = resp.GetTask().GetId()
		return true
	})
	return id
}

// watch opens WatchEvents for identity ("" for all) with token from the
// start of etcd's history, so it is known to be open once it delivers the
// event of a task scheduled before.
func (n *revokeNode) watch(t *testing.T, token, identity string) taskdv1.TaskService_WatchEventsClient {
	t.Helper()
	s, err := n.tasks.WatchEvents(bearer(t, token), &taskdv1.WatchEventsRequest{Identity: identity, Cursor: "1.0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatalf("watch with %s: %v", token, err)
	}
	return s
}

// wantRevokedWatch reads s until it ends: with UNAUTHENTICATED saying the
// token was revoked, and with no event of a task in after.
func wantRevokedWatch(t *testing.T, what string, s taskdv1.TaskService_WatchEventsClient, after ...string) {
	t.Helper()
	for {
		resp, err := s.Recv()
		if err != nil {
			if status.Code(err) != codes.Unauthenticated || !strings.Contains(status.Convert(err).Message(), "revoked") {
				t.Fatalf("%s: the stream ended with %v, want Unauthenticated saying the token was revoked", what, err)
			}
			return
		}
		for _, ev := range resp.GetEvents() {
			for _, id := range after {
				if ev.GetTaskId() == id {
					t.Fatalf("%s: event %v of task %s, scheduled after the revocation, was delivered", what, ev, id)
				}
			}
		}
	}
}

// openWorker opens a Work stream serving kind with token and waits for the
// welcome: from then on the node dispatches runs of kind to it.
func (n *revokeNode) openWorker(t *testing.T, token string, kinds ...string) taskdv1.WorkerService_WorkClient {
	t.Helper()
	s, err := n.work.Work(bearer(t, token))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Hello{Hello: &taskdv1.WorkerHello{
		Worker: "w-" + strings.Split(token, ".")[0], Kinds: kinds, Concurrency: 4}}}); err != nil {
		t.Fatal(err)
	}
	m, err := s.Recv()
	if err != nil || m.GetWelcome() == nil {
		t.Fatalf("worker with %s: %v %v, want a welcome", token, m, err)
	}
	return s
}

// wantRevokedWorker reads s until it ends, with UNAUTHENTICATED saying the
// token was revoked, having been sent no run.
func wantRevokedWorker(t *testing.T, what string, s taskdv1.WorkerService_WorkClient) {
	t.Helper()
	for {
		m, err := s.Recv()
		if err != nil {
			if status.Code(err) != codes.Unauthenticated || !strings.Contains(status.Convert(err).Message(), "revoked") {
				t.Fatalf("%s: the stream ended with %v, want Unauthenticated saying the token was revoked", what, err)
			}
			return
		}
		if m.GetRun() != nil {
			t.Fatalf("%s: run %v sent after the revocation", what, m.GetRun())
		}
	}
}

func (n *revokeNode) create(t *testing.T, id, verbs string, scopes ...string) string {
	t.Helper()
	resp, err := n.toks.CreateToken(bearer(t, n.rootTk), &taskdv1.CreateTokenRequest{Id: id, Verbs: strings.Split(verbs, ","), Identities: scopes})
	if err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	return resp.GetBearer()
}

func (n *revokeNode) revoke(t *testing.T, id string) {
	t.Helper()
	if _, err := n.toks.RevokeToken(bearer(t, n.rootTk), &taskdv1.RevokeTokenRequest{Id: id}); err != nil {
		t.Fatalf("revoke %s: %v", id, err)
	}
}

// wantRun reads the kept worker s until it is sent a run of task, which it
// reports a success.
func wantRun(t *testing.T, s taskdv1.WorkerService_WorkClient, task string) {
	t.Helper()
	for {
		m, err := s.Recv()
		if err != nil {
			t.Fatalf("the kept worker's stream: %v", err)
		}
		if r := m.GetRun(); r != nil && r.GetTaskId() == task {
			if err := s.Send(&taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Outcome{Outcome: &taskdv1.WorkOutcome{
				RunId: r.GetRunId(), Fence: r.GetFence(), Result: taskdv1.WorkResult_WORK_RESULT_SUCCESS}}}); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestRevocationEndsStreams: revoking a stored token through the
// TokenService ends the streams opened with it, with UNAUTHENTICATED: a
// WatchEvents stream delivers no event after the revocation (the issue's
// `taskctl events -f` kept printing another identity's events), a worker's
// Work stream is sent no run after it (the run goes to another worker);
// the console's live-event stream of a viewer with that token ends with an
// apierror and a reconnection is refused. Streams of other tokens stay
// open.
func TestRevocationEndsStreams(t *testing.T) {
	n := startRevokeNode(t, "revoke-1", tokenLine("root", "root-secret", "schedule,read,control,admin,work", ""))
	n.rootTk = "root.root-secret"
	keptWorker := n.openWorker(t, n.rootTk, "k", "remote-k")
	n.schedule(t, "alice", "k", false)
	watcher := n.create(t, "watcher", "read")
	worker := n.create(t, "worker", "work")
	viewer := n.create(t, "viewer", "read")

	kept := n.watch(t, n.rootTk, "")
	watch := n.watch(t, watcher, "")
	work := n.openWorker(t, worker, "remote-k")

	// The console's live events, as a browser's EventSource reads them.
	ctx, cancel := context.WithTimeout(context.Background(), streamWait)
	defer cancel()
	sse := func() (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.d.http+"/ui/events/stream", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+viewer)
		req.Header.Set("Last-Event-ID", "1.0")
		return http.DefaultClient.Do(req)
	}
	resp, err := sse()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("console stream: HTTP %d", resp.StatusCode)
	}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "event: task") {
	}

	n.revoke(t, "watcher")
	later := n.schedule(t, "bob", "k", false)
	wantRevokedWatch(t, "WatchEvents", watch, later)

	n.revoke(t, "worker")
	run := n.schedule(t, "carol", "remote-k", true)
	wantRevokedWorker(t, "Work", work)
	wantRun(t, keptWorker, run)

	n.revoke(t, "viewer")
	n.schedule(t, "dave", "k", false)
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	if err := lines.Err(); err != nil {
		t.Fatalf("console stream after the revocation: %v (it did not end); got %q", err, rest)
	}
	if got := strings.Join(rest, "\n"); !strings.Contains(got, "event: apierror") || !strings.Contains(got, `"code":"Unauthenticated"`) ||
		!strings.Contains(got, "revoked") || strings.Contains(got, `"identity":"dave"`) {
		t.Fatalf("console stream after the revocation:\n%s\nwant an apierror saying Unauthenticated: revoked, and no later event", got)
	}
	// A browser reconnecting with the revoked token is refused.
	again, err := sse()
	if err != nil {
		t.Fatal(err)
	}
	again.Body.Close()
	if again.StatusCode != http.StatusUnauthorized {
		t.Fatalf("console stream reopened with the revoked token: HTTP %d, want 401", again.StatusCode)
	}

	// The root token's stream saw it all and is still open.
	for seen := false; !seen; {
		r, err := kept.Recv()
		if err != nil {
			t.Fatalf("the stream of a kept token: %v", err)
		}
		for _, ev := range r.GetEvents() {
			seen = seen || ev.GetTaskId() == later
		}
	}
}

// TestTokensReloadEndsStreams: a tokens-file reload (SIGHUP) ends the
// streams of each token whose line it removed or changed so that it no
// longer covers the stream (here: its scope moved off the watched
// identity), with UNAUTHENTICATED; the streams of a token kept as it was
// stay open.
func TestTokensReloadEndsStreams(t *testing.T) {
	root := tokenLine("root", "root-secret", "schedule,read,control,admin,work", "")
	n := startRevokeNode(t, "reload-1", root,
		tokenLine("fwatch", "fwatch-secret", "read", ""),
		tokenLine("fwork", "fwork-secret", "work", ""),
		tokenLine("fscoped", "fscoped-secret", "read", "alice"))
	n.rootTk = "root.root-secret"
	keptWorker := n.openWorker(t, n.rootTk, "k", "remote-k")
	n.schedule(t, "alice", "k", false)

	kept := n.watch(t, n.rootTk, "alice")
	watch := n.watch(t, "fwatch.fwatch-secret", "")
	scoped := n.watch(t, "fscoped.fscoped-secret", "alice")
	work := n.openWorker(t, "fwork.fwork-secret", "remote-k")

	writeTokens(t, n.file, root, tokenLine("fscoped", "fscoped-secret", "read", "bob"))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	n.d.log.wait(t, regexp.MustCompile(`tokens reloaded: .*ids="fscoped,root"`), n.d.exited)
	later := n.schedule(t, "alice", "remote-k", true)
	wantRevokedWatch(t, "WatchEvents of a removed token", watch, later)
	wantRevokedWatch(t, "WatchEvents of a token no longer scoped to its identity", scoped, later)
	wantRevokedWorker(t, "Work of a removed token", work)
	wantRun(t, keptWorker, later)
	for seen := false; !seen; {
		r, err := kept.Recv()
		if err != nil {
			t.Fatalf("the stream of a kept token: %v", err)
		}
		for _, ev := range r.GetEvents() {
			seen = seen || ev.GetTaskId() == later
		}
	}
}

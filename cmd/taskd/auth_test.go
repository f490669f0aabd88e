package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// tokenLine is the tokens-file line of token id with secret.
func tokenLine(id, secret, verbs, scopes string) string {
	sum := sha256.Sum256([]byte(secret))
	return strings.TrimSpace(fmt.Sprintf("%s %s %s %s", id, hex.EncodeToString(sum[:]), verbs, scopes))
}

// writeTokens replaces path with lines, by a rename.
func writeTokens(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// TestTokens: a taskd with --tokens-file refuses TaskService calls without a
// valid token (UNAUTHENTICATED), refuses calls outside a token's verbs or
// identities (PERMISSION_DENIED naming them), serves those within, leaves
// health open, and stops accepting a token removed from the file after
// SIGHUP.
func TestTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	lines := []string{
		"# test tokens",
		tokenLine("root", "root-secret", "schedule,read,control,admin", ""),
		tokenLine("reader", "reader-secret", "read", "alice,tenant-7/*"),
		tokenLine("gone", "gone-secret", "read", ""),
		tokenLine("worker", "worker-secret", "work", ""),
		tokenLine("tenantworker", "tw-secret", "work", "tenant-7/*"),
	}
	writeTokens(t, file, lines...)
	d := startTaskd(t, "--tokens-file", file)

	conn, err := grpc.NewClient(d.api, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := taskdv1.NewTaskServiceClient(conn)
	with := func(token string) context.Context {
		ctx := context.Background()
		if token != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
		}
		return ctx
	}
	list := func(token, identity string) error {
		_, err := c.ListTasks(with(token), &taskdv1.ListTasksRequest{Identity: identity})
		return err
	}
	schedule := func(token, identity string) error {
		_, err := c.ScheduleTask(with(token), &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{Identity: identity, Kind: "k"}})
		return err
	}
	watch := func(token, identity string) error {
		ctx, cancel := context.WithCancel(with(token))
		defer cancel()
		s, err := c.WatchEvents(ctx, &taskdv1.WatchEventsRequest{Identity: identity, Cursor: "0"})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	work := func(token string) error {
		ctx, cancel := context.WithCancel(with(token))
		defer cancel()
		s, err := taskdv1.NewWorkerServiceClient(conn).Work(ctx)
		if err != nil {
			return err
		}
		// A stream the node refuses at once may fail the Send with io.EOF;
		// its status is what Recv returns then.
		if err := s.Send(&taskdv1.WorkRequest{Msg: &taskdv1.WorkRequest_Hello{Hello: &taskdv1.WorkerHello{Worker: "w", Kinds: []string{"k"}, Concurrency: 1}}}); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		m, err := s.Recv()
		if err == nil && m.GetWelcome() == nil {
			return fmt.Errorf("first message %v is not a welcome", m)
		}
		return err
	}

	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
		want []string // in the message
	}{
		{"no token", func() error { return list("", "alice") }, codes.Unauthenticated, nil},
		{"not a bearer", func() error { return list("root", "alice") }, codes.Unauthenticated, nil},
		{"wrong secret", func() error { return list("root.nope", "alice") }, codes.Unauthenticated, nil},
		{"unknown id", func() error { return list("who.root-secret", "alice") }, codes.Unauthenticated, nil},
		{"no token on a stream", func() error { return watch("", "alice") }, codes.Unauthenticated, nil},
		{"verb missing", func() error { return schedule("reader.reader-secret", "alice") }, codes.PermissionDenied, []string{`"schedule"`, "reader"}},
		{"admin verb missing", func() error {
			_, err := c.DrainNode(with("reader.reader-secret"), &taskdv1.DrainNodeRequest{Node: "x"})
			return err
		}, codes.PermissionDenied, []string{`"admin"`}},
		{"delete needs control", func() error {
			_, err := c.DeleteTask(with("reader.reader-secret"), &taskdv1.DeleteTaskRequest{Identity: "alice", TaskId: "01hzzzzzzzzzzzzzzzzzzzzzzz"})
			return err
		}, codes.PermissionDenied, []string{`"control"`, "reader"}},
		{"delete with control reaches the node", func() error {
			_, err := c.DeleteTask(with("root.root-secret"), &taskdv1.DeleteTaskRequest{Identity: "alice", TaskId: "01hzzzzzzzzzzzzzzzzzzzzzzz"})
			return err
		}, codes.NotFound, nil},
		{"exact identity out of scope", func() error { return list("reader.reader-secret", "bob") }, codes.PermissionDenied, []string{`"bob"`, `"read"`}},
		{"prefix out of scope", func() error { return list("reader.reader-secret", "tenant-8/a") }, codes.PermissionDenied, []string{`"tenant-8/a"`}},
		{"prefix is not a substring", func() error { return list("reader.reader-secret", "tenant-7") }, codes.PermissionDenied, []string{`"tenant-7"`}},
		{"all identities with a scoped token", func() error { return list("reader.reader-secret", "") }, codes.PermissionDenied, []string{`"read"`, "unscoped"}},
		{"stream out of scope", func() error { return watch("reader.reader-secret", "bob") }, codes.PermissionDenied, []string{`"bob"`}},
		{"stream across identities with a scoped token", func() error { return watch("reader.reader-secret", "") }, codes.PermissionDenied, []string{"unscoped"}},
		{"exact identity in scope", func() error { return list("reader.reader-secret", "alice") }, codes.OK, nil},
		{"prefix in scope", func() error { return list("reader.reader-secret", "tenant-7/a") }, codes.OK, nil},
		{"unscoped token across identities", func() error { return list("root.root-secret", "") }, codes.OK, nil},
		{"identity-free read", func() error {
			_, err := c.ListNodes(with("reader.reader-secret"), &taskdv1.ListNodesRequest{})
			return err
		}, codes.OK, nil},
		{"worker without the work verb", func() error { return work("root.root-secret") }, codes.PermissionDenied, []string{`"work"`}},
		{"worker with a scoped token", func() error { return work("tenantworker.tw-secret") }, codes.PermissionDenied, []string{"unscoped"}},
		{"no token on the worker stream", func() error { return work("") }, codes.Unauthenticated, nil},
		{"worker with the work verb", func() error { return work("worker.worker-secret") }, codes.OK, nil},
		{"health stays open", func() error {
			_, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
			return err
		}, codes.OK, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if code := status.Code(err); code != tc.code {
				t.Fatalf("code %v (%v), want %v", code, err, tc.code)
			}
			for _, w := range tc.want {
				if msg := status.Convert(err).Message(); !strings.Contains(msg, w) {
					t.Errorf("message %q does not name %s", msg, w)
				}
			}
		})
	}

	t.Run("revoked", func(t *testing.T) {
		if err := list("gone.gone-secret", "alice"); err != nil {
			t.Fatalf("before revocation: %v", err)
		}
		writeTokens(t, file, lines[:3]...)
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		d.log.wait(t, regexp.MustCompile(`tokens reloaded: .*ids="reader,root"`), d.exited)
		if code := status.Code(list("gone.gone-secret", "alice")); code != codes.Unauthenticated {
			t.Fatalf("revoked token: code %v, want Unauthenticated", code)
		}
		if err := list("root.root-secret", "alice"); err != nil {
			t.Fatalf("a kept token after the reload: %v", err)
		}
	})

	t.Run("a bad file keeps the previous tokens", func(t *testing.T) {
		writeTokens(t, file, "root not-hex read")
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		d.log.wait(t, regexp.MustCompile(`tokens reload on SIGHUP failed`), d.exited)
		if err := list("root.root-secret", "alice"); err != nil {
			t.Fatalf("after a failed reload: %v", err)
		}
	})
}

// TestListenPolicy: a non-loopback --listen needs --tokens-file or
// --insecure; start-up refuses otherwise, naming the options.
func TestListenPolicy(t *testing.T) {
	d := launchTaskd(t, "--listen", "0.0.0.0:0")
	select {
	case <-d.exited:
	case <-time.After(time.Minute):
		d.stop()
		<-d.exited
		t.Fatal("taskd started on 0.0.0.0 without tokens or --insecure")
	}
	if d.code != 1 || !strings.Contains(d.log.String(), "--tokens-file") || !strings.Contains(d.log.String(), "--insecure") {
		t.Fatalf("exit %d, log:\n%s\nwant exit 1 naming --tokens-file and --insecure", d.code, d.log)
	}

	startTaskd(t, "--listen", "0.0.0.0:0", "--insecure")
}

// TestEmbeddedEtcdPolicy: the embedded etcd on a non-loopback client URL
// serves every key to whoever reaches it, tokens or not, so start-up
// refuses it unless it requires client certificates or --insecure is
// given.
func TestEmbeddedEtcdPolicy(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, tokens, tokenLine("root", "root-secret", "schedule,read,control,admin,work", ""))
	for _, args := range [][]string{
		{"--etcd-listen", "http://0.0.0.0:0"},
		{"--etcd-listen", "http://0.0.0.0:0", "--tokens-file", tokens},
	} {
		d := launchTaskd(t, args...)
		select {
		case <-d.exited:
		case <-time.After(time.Minute):
			d.stop()
			<-d.exited
			t.Fatalf("taskd %v started with its etcd open on 0.0.0.0", args)
		}
		if d.code != 1 || !strings.Contains(d.log.String(), "--etcd-listen") || !strings.Contains(d.log.String(), "--tls-client-ca") ||
			!strings.Contains(d.log.String(), "--insecure") {
			t.Fatalf("taskd %v: exit %d, log:\n%s\nwant exit 1 naming --etcd-listen, --tls-client-ca and --insecure", args, d.code, d.log)
		}
	}
	startTaskd(t, "--etcd-listen", "http://0.0.0.0:0", "--insecure")
}

// TestStoredTokens: on two nodes sharing etcd, an admin token of the file
// creates a token through the TokenService; both nodes accept it (the
// creating one at once), it is refused outside its verbs and identities,
// the tokens service itself needs admin, and once revoked it is refused
// with UNAUTHENTICATED: by the revoking node at once, by the other as soon
// as its follower sees the deletion.
func TestStoredTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, file, tokenLine("root", "root-secret", "schedule,read,control,admin", ""),
		tokenLine("reader", "reader-secret", "read", ""))
	a := startTaskd(t, "--name", "tok-a", "--tokens-file", file)
	b := startTaskd(t, "--name", "tok-b", "--tokens-file", file, "--etcd", a.etcd)

	conns := map[string]*grpc.ClientConn{}
	for name, d := range map[string]*taskd{"a": a, "b": b} {
		conn, err := grpc.NewClient(d.api, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns[name] = conn
	}
	with := func(token string) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	tokA := taskdv1.NewTokenServiceClient(conns["a"])
	if _, err := tokA.ListTokens(with("reader.reader-secret"), &taskdv1.ListTokensRequest{}); status.Code(err) != codes.PermissionDenied ||
		!strings.Contains(err.Error(), `"admin"`) {
		t.Fatalf("ListTokens with a read token: %v, want PermissionDenied naming admin", err)
	}
	if _, err := tokA.ListTokens(context.Background(), &taskdv1.ListTokensRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("ListTokens without a token: %v, want Unauthenticated", err)
	}
	if _, err := tokA.CreateToken(with("root.root-secret"), &taskdv1.CreateTokenRequest{Id: "ci", Verbs: []string{"sing"}}); status.Code(err) != codes.InvalidArgument ||
		!strings.Contains(status.Convert(err).Message(), "verbs:") {
		t.Fatalf("CreateToken with a bad verb: %v, want InvalidArgument naming verbs", err)
	}
	created, err := tokA.CreateToken(with("root.root-secret"), &taskdv1.CreateTokenRequest{Id: "ci", Verbs: []string{"schedule", "read"},
		Identities: []string{"tenant-7/*"}})
	if err != nil {
		t.Fatal(err)
	}
	if by := created.GetToken().GetCreatedBy(); by != "root" {
		t.Fatalf("created_by %q, want root", by)
	}
	ci := created.GetBearer()
	list := func(node, token, identity string) error {
		_, err := taskdv1.NewTaskServiceClient(conns[node]).ListTasks(with(token), &taskdv1.ListTasksRequest{Identity: identity})
		return err
	}
	if err := list("a", ci, "tenant-7/x"); err != nil {
		t.Fatalf("new token on the creating node: %v", err)
	}
	waitUntil(t, "node b accepts the new token", func() bool { return list("b", ci, "tenant-7/x") == nil })
	if err := list("b", ci, "bob"); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `"bob"`) {
		t.Fatalf("out of scope: %v, want PermissionDenied naming bob", err)
	}
	_, err = taskdv1.NewTaskServiceClient(conns["b"]).CancelTask(with(ci), &taskdv1.CancelTaskRequest{Identity: "tenant-7/x", TaskId: "x"})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `"control"`) {
		t.Fatalf("verb out of the token: %v, want PermissionDenied naming control", err)
	}

	if _, err := tokA.RevokeToken(with("root.root-secret"), &taskdv1.RevokeTokenRequest{Id: "reader"}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("revoking a file token: %v, want FailedPrecondition", err)
	}
	if _, err := tokA.RevokeToken(with("root.root-secret"), &taskdv1.RevokeTokenRequest{Id: "ci"}); err != nil {
		t.Fatal(err)
	}
	if err := list("a", ci, "tenant-7/x"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("revoked token on the revoking node: %v, want Unauthenticated", err)
	}
	waitUntil(t, "node b refuses the revoked token", func() bool { return status.Code(list("b", ci, "tenant-7/x")) == codes.Unauthenticated })
}

// waitUntil polls cond until it holds, failing the test after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

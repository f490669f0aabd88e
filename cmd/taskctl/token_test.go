package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	"github.com/taskd/taskd/pkg/tokens"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// authRecorder is a TaskService that answers ListNodes and records the
// authorization metadata of each call.
type authRecorder struct {
	taskdv1.UnimplementedTaskServiceServer
	got chan []string
}

func (r *authRecorder) ListNodes(ctx context.Context, _ *taskdv1.ListNodesRequest) (*taskdv1.ListNodesResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	r.got <- md.Get("authorization")
	return &taskdv1.ListNodesResponse{}, nil
}

// TestTokenSent: --token and TASKCTL_TOKEN are sent as the bearer token,
// the flag winning; without either no authorization is sent.
func TestTokenSent(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &authRecorder{got: make(chan []string, 1)}
	gs := grpc.NewServer()
	taskdv1.RegisterTaskServiceServer(gs, rec)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()

	for _, tc := range []struct {
		name  string
		flags []string
		env   string
		want  []string
	}{
		{"none", nil, "", nil},
		{"flag", []string{"--token", "a.s1"}, "", []string{"Bearer a.s1"}},
		{"environment", nil, "b.s2", []string{"Bearer b.s2"}},
		{"flag beats the environment", []string{"--token", "a.s1"}, "b.s2", []string{"Bearer a.s1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envToken, tc.env)
			var out, errOut bytes.Buffer
			args := append(append([]string{"--addr", lis.Addr().String()}, tc.flags...), "nodes")
			if code := run(args, &out, &errOut); code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			if got := <-rec.got; strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("authorization %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTokenCreate: token create prints a token whose secret hashes to the
// printed tokens-file line, and refuses bad verbs, scopes and ids.
func TestTokenCreate(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"token", "create", "--offline", "--id", "ops", "--verbs", "schedule,read", "--identities", "alice,tenant-7/*"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	m := regexp.MustCompile(`(?m)^token: ops\.(\S+)\ntokens-file line: ops ([0-9a-f]{64}) schedule,read alice,tenant-7/\*\n$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("output %q", out.String())
	}
	if sum := sha256.Sum256([]byte(m[1])); hex.EncodeToString(sum[:]) != m[2] {
		t.Fatalf("the line's hash %s is not the SHA-256 of the secret %s", m[2], m[1])
	}

	for _, args := range [][]string{
		{"token", "create"},
		{"token", "create", "--verbs", "fly"},
		{"token", "create", "--verbs", "read", "--identities", "a*b"},
		{"token", "create", "--verbs", "read", "--id", "a.b"},
	} {
		out.Reset()
		errOut.Reset()
		if code := run(args, &out, &errOut); code != exitUsage || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q: want %d and nothing printed", args, code, out.String(), exitUsage)
		}
	}
}

// TestTokenCommands: token create, list and revoke against a real
// TokenService over etcd, checked by an admin token of a tokens file: the
// stored token works at once, lacks what it was not given, and is refused
// once revoked.
func TestTokenCommands(t *testing.T) {
	e := tst.StartEtcd(t)
	cli := e.Client(t)
	file, err := tokens.ParseFile(tokens.FileLine("root", "root-secret", []string{"admin", "read"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	fol := tokens.NewFollower(cli, "/ctl-tokens/")
	auth := tokens.NewAuthorizer(file, fol)
	ctx, cancel := context.WithCancel(context.Background())
	folDone := make(chan struct{})
	go func() { defer close(folDone); fol.Run(ctx) }()
	defer func() { cancel(); <-folDone }()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(auth.ServerOptions()...)
	taskdv1.RegisterTokenServiceServer(gs, tokens.NewServer(cli, "/ctl-tokens/", fol, auth.FileTokens))
	taskdv1.RegisterTaskServiceServer(gs, &authRecorder{got: make(chan []string, 10)})
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()

	ctl := func(token string, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(append([]string{"--addr", lis.Addr().String(), "--token", token}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, out, errOut := ctl("root.root-secret", "token", "create", "--id", "ci", "--verbs", "read", "--identities", "tenant-7/*", "--description", "CI job")
	m := regexp.MustCompile(`^token: (ci\.\S+)\n$`).FindStringSubmatch(out)
	if code != exitOK || m == nil {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	ci := m[1]
	if code, _, errOut := ctl("root.root-secret", "token", "create", "--id", "ci", "--verbs", "read"); code != exitError || !strings.Contains(errOut, "AlreadyExists") {
		t.Fatalf("second create: exit %d, %q", code, errOut)
	}

	code, out, errOut = ctl("root.root-secret", "token", "list")
	if code != exitOK {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	rows := regexp.MustCompile(`(?m)^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(.+)$`).FindAllStringSubmatch(out, -1)
	if len(rows) != 3 || rows[1][1] != "ci" || rows[1][2] != "etcd" || rows[1][4] != "tenant-7/*" || rows[1][6] != "root" || rows[1][7] != "CI job" ||
		rows[2][1] != "root" || rows[2][2] != "file" || strings.Contains(out, "root-secret") {
		t.Fatalf("list:\n%s", out)
	}

	// The stored token reads in its scope, and may not manage tokens.
	if code, _, errOut := ctl(ci, "nodes"); code != exitOK {
		t.Fatalf("nodes with the stored token: exit %d: %s", code, errOut)
	}
	if code, _, errOut := ctl(ci, "token", "list"); code != exitError || !strings.Contains(errOut, "PermissionDenied") || !strings.Contains(errOut, `"admin"`) {
		t.Fatalf("token list with a read token: exit %d, %q", code, errOut)
	}

	if code, out, errOut := ctl("root.root-secret", "token", "revoke", "ci"); code != exitOK || out != "revoked ci\n" {
		t.Fatalf("revoke: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := ctl(ci, "nodes"); code != exitError || !strings.Contains(errOut, "Unauthenticated") {
		t.Fatalf("nodes with the revoked token: exit %d, %q", code, errOut)
	}
	if code, _, errOut := ctl("root.root-secret", "token", "revoke", "ci"); code != exitError || !strings.Contains(errOut, "NotFound") {
		t.Fatalf("second revoke: exit %d, %q", code, errOut)
	}
	if code, _, _ := ctl("root.root-secret", "token", "revoke"); code != exitUsage {
		t.Fatalf("revoke without an id: exit %d", code)
	}
}

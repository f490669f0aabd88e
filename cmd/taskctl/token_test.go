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
	if code := run([]string{"token", "create", "--id", "ops", "--verbs", "schedule,read", "--identities", "alice,tenant-7/*"}, &out, &errOut); code != exitOK {
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

package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/cli/command"
)

func TestDescribeError(t *testing.T) {
	opts := &command.Options{Addr: "10.0.0.1:7420", Timeout: 3 * time.Second}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{status.Error(codes.NotFound, "task t1 not found"), "NotFound: task t1 not found"},
		{status.Error(codes.InvalidArgument, "kind:\n  unknown"), "InvalidArgument: kind: unknown"},
		{status.Error(codes.Unavailable, "connection refused"), "Unavailable: connection refused (is a taskd node listening on 10.0.0.1:7420?"},
		{status.Error(codes.Unavailable, "connection refused"), "Unavailable: connection refused (is a taskd node listening on 10.0.0.1:7420? set it with --addr or TASKCTL_ADDR; if it serves TLS, give --tls-ca)"},
		{status.Error(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"`),
			"Unavailable: connection error: desc = \"transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority\" (TLS with 10.0.0.1:7420 failed: check --tls-ca, --tls-cert and --tls-key, or TASKCTL_TLS_CA, TASKCTL_TLS_CERT and TASKCTL_TLS_KEY)"},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), "DeadlineExceeded: context deadline exceeded (no answer from 10.0.0.1:7420 within --timeout 3s)"},
		{status.Error(codes.Unauthenticated, "a bearer token is required"), "Unauthenticated: a bearer token is required (the node requires a bearer token: give --token ID.SECRET or TASKCTL_TOKEN)"},
		{errors.New("plain failure"), "plain failure"},
		{&command.HintError{Err: status.Error(codes.OutOfRange, "cursor 2.0: too old"), Hint: "start again"}, "OutOfRange: cursor 2.0: too old (start again)"},
	} {
		if got := describeError(tc.err, opts); !strings.HasPrefix(got, tc.want) || strings.Contains(got, "\n") {
			t.Errorf("describeError(%v) = %q, want one line starting %q", tc.err, got, tc.want)
		}
	}
}

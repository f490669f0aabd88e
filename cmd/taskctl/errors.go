package main

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/cli/command"
	"github.com/taskd/taskd/internal/cli/render"
	"github.com/taskd/taskd/pkg/client"
)

// This file renders a failed command's error for people.

// describeError renders a failed command's error on one line. gRPC errors
// read "<code>: <message>", with a hint for Unavailable, DeadlineExceeded
// and Unauthenticated without a token.
func describeError(err error, opts *command.Options) string {
	var h *command.HintError
	if errors.As(err, &h) {
		return describeError(h.Err, opts) + " (" + h.Hint + ")"
	}
	st, ok := status.FromError(err)
	if !ok {
		return render.OneLine(err.Error())
	}
	msg := fmt.Sprintf("%s: %s", st.Code(), render.OneLine(st.Message()))
	switch st.Code() {
	case codes.Unavailable:
		if client.MissingClientCertificate(err) {
			msg += fmt.Sprintf(" (give --tls-cert FILE and --tls-key FILE, or %s and %s)", envTLSCert, envTLSKey)
			break
		}
		if tlsProblem(st.Message()) {
			msg += fmt.Sprintf(" (TLS with %s failed: check --tls-ca, --tls-cert and --tls-key, or %s, %s and %s)",
				opts.Addr, envTLSCA, envTLSCert, envTLSKey)
			break
		}
		msg += fmt.Sprintf(" (is a taskd node listening on %s? set it with --addr or %s", opts.Addr, envAddr)
		if !opts.TLS.Set() {
			msg += "; if it serves TLS, give --tls-ca"
		}
		msg += ")"
	case codes.DeadlineExceeded:
		msg += fmt.Sprintf(" (no answer from %s within --timeout %s)", opts.Addr, opts.Timeout)
	case codes.Unauthenticated:
		if opts.Token == "" {
			msg += " (the node requires a bearer token: give --token ID.SECRET or " + envToken + ")"
		}
	}
	return msg
}

// tlsProblem reports whether a connection error message is about TLS: a
// failed handshake, a refused or untrusted certificate.
func tlsProblem(msg string) bool {
	for _, m := range []string{"tls:", "x509:", "certificate", "authentication handshake failed"} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

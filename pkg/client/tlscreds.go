package client

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc/credentials"
)

// noClientCertificate is what an error says when the node asked for a
// client certificate, none was sent and the connection then failed.
// MissingClientCertificate looks for it.
const noClientCertificate = "the node asked for a client certificate and none was given"

// certRefused is what an error says when the node asked for a client
// certificate, one was sent and the connection then failed before the node
// said anything: the node most likely did not accept it.
const certRefused = "the node asked for a client certificate and closed the connection after the one given: it may not trust it"

// TLSCredentials returns the gRPC transport credentials WithTLS uses, for
// connections made without this package (as taskctl's). They are those of
// credentials.NewTLS(cfg), with one difference: when the node asks for a
// client certificate and the connection fails before the node has sent
// anything, the error says so. A node that requires client certificates
// rejects a missing one only after a TLS 1.3 handshake has completed on
// the client's side, so the client otherwise sees a bare "broken pipe",
// "EOF" or, at best, "tls: certificate required", depending on which of
// its reads and writes comes first; MissingClientCertificate then reports
// true for the error of the call.
func TLSCredentials(cfg *tls.Config) credentials.TransportCredentials {
	if cfg == nil {
		cfg = &tls.Config{}
	}
	return &certCreds{TransportCredentials: credentials.NewTLS(cfg), cfg: cfg.Clone(), last: new(atomic.Pointer[string])}
}

// MissingClientCertificate reports whether err (a call's error, or the
// error of New) is a connection that failed because the node asked for a
// client certificate and none was given: configure one (taskctl
// --tls-cert and --tls-key).
func MissingClientCertificate(err error) bool {
	return err != nil && strings.Contains(err.Error(), noClientCertificate)
}

// certCreds are TLS credentials that notice whether the node asked for a
// client certificate and whether one was sent. Only ClientHandshake
// differs from the wrapped credentials.
type certCreds struct {
	credentials.TransportCredentials
	cfg *tls.Config
	// last is the most recent connection error that carried a hint, for
	// New's error: gRPC keeps the reason a connection failed to itself.
	// Clones share it.
	last *atomic.Pointer[string]
}

// ClientHandshake runs the TLS handshake with a copy of the configuration
// whose certificate choice also records what the node asked for. The choice
// is the one crypto/tls makes itself when the configuration has no
// GetClientCertificate: the first of Certificates the request accepts, or
// none.
func (c *certCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	cfg := c.cfg.Clone()
	var asked, sent atomic.Bool
	get := cfg.GetClientCertificate
	certs := cfg.Certificates
	cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		asked.Store(true)
		if get != nil {
			cert, err := get(cri)
			sent.Store(err == nil && cert != nil && len(cert.Certificate) > 0)
			return cert, err
		}
		for i := range certs {
			if cri.SupportsCertificate(&certs[i]) == nil {
				sent.Store(true)
				return &certs[i], nil
			}
		}
		return &tls.Certificate{}, nil
	}
	conn, info, err := credentials.NewTLS(cfg).ClientHandshake(ctx, authority, raw)
	hint := func() string {
		switch {
		case !asked.Load():
			return ""
		case sent.Load():
			return certRefused
		}
		return noClientCertificate
	}
	if err != nil {
		if h := hint(); h != "" {
			err = c.note(&hintedError{err: err, hint: h})
		}
		return nil, nil, err
	}
	if h := hint(); h != "" {
		conn = &hintConn{Conn: conn, hint: h, creds: c}
	}
	return conn, info, nil
}

// Clone keeps the wrapper, and its record of the last problem.
func (c *certCreds) Clone() credentials.TransportCredentials {
	return &certCreds{TransportCredentials: c.TransportCredentials.Clone(), cfg: c.cfg.Clone(), last: c.last}
}

// OverrideServerName is kept for the interface; each handshake then uses
// the name.
func (c *certCreds) OverrideServerName(name string) error {
	c.cfg.ServerName = name
	//lint:ignore SA1019 the interface still has it
	return c.TransportCredentials.OverrideServerName(name)
}

// note records err as the last hinted connection error and returns it.
func (c *certCreds) note(err error) error {
	s := err.Error()
	c.last.Store(&s)
	return err
}

// lastProblem is the last hinted connection error, or "".
func (c *certCreds) lastProblem() string {
	if s := c.last.Load(); s != nil {
		return *s
	}
	return ""
}

// hintConn adds the hint to the errors of a connection on which the node
// asked for a client certificate, until the node has sent something: a
// read that returns data means the node accepted the handshake, and later
// errors are about something else.
type hintConn struct {
	net.Conn
	hint     string
	creds    *certCreds
	answered atomic.Bool
}

func (c *hintConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.answered.Store(true)
	}
	return n, c.wrap(err)
}

func (c *hintConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	return n, c.wrap(err)
}

func (c *hintConn) wrap(err error) error {
	if err == nil || c.answered.Load() {
		return err
	}
	return c.creds.note(&hintedError{err: err, hint: c.hint})
}

// hintedError is a connection error with the hint appended.
type hintedError struct {
	err  error
	hint string
}

func (e *hintedError) Error() string { return e.err.Error() + " (" + e.hint + ")" }
func (e *hintedError) Unwrap() error { return e.err }

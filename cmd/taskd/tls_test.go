package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/devcerts"
	"github.com/taskd/taskd/pkg/etcdembed"
)

// pki is a CA with certificates for tests, written to dir.
type pki struct {
	t      *testing.T
	dir    string
	ca     *devcerts.CA
	caFile string
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	ca, err := devcerts.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return &pki{t: t, dir: dir, ca: ca, caFile: caFile}
}

// issue signs a certificate for 127.0.0.1 usable by a server and a client.
func (p *pki) issue(cn string, o devcerts.LeafOptions) *devcerts.Pair {
	p.t.Helper()
	o.IPs = []net.IP{net.IPv4(127, 0, 0, 1)}
	o.DNSNames = []string{"localhost"}
	o.Server, o.Client = true, true
	pair, err := p.ca.Issue(cn, o)
	if err != nil {
		p.t.Fatal(err)
	}
	return pair
}

// write writes pair to dir/name.crt and .key, each by a rename so that a
// reader never sees half a file; it returns the paths.
func (p *pki) write(pair *devcerts.Pair, name string) (certFile, keyFile string) {
	p.t.Helper()
	certFile, keyFile = filepath.Join(p.dir, name+".crt"), filepath.Join(p.dir, name+".key")
	for _, f := range []struct {
		path string
		data []byte
	}{{certFile, pair.CertPEM}, {keyFile, pair.KeyPEM}} {
		tmp := f.path + ".tmp"
		if err := os.WriteFile(tmp, f.data, 0o600); err != nil {
			p.t.Fatal(err)
		}
		if err := os.Rename(tmp, f.path); err != nil {
			p.t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// logWatch is the stderr of an in-process taskd: it keeps the log and
// tells waiters when a line matching their pattern is written.
type logWatch struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced at every write
}

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{})} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

// wait returns the first submatches of re in the log, waiting for a
// write while there is none; it gives up when exited is closed.
func (w *logWatch) wait(t *testing.T, re *regexp.Regexp, exited <-chan struct{}) []string {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		w.mu.Lock()
		m := re.FindStringSubmatch(w.buf.String())
		ch := w.changed
		w.mu.Unlock()
		if m != nil {
			return m
		}
		select {
		case <-ch:
		case <-exited:
			t.Fatalf("taskd exited before logging %q:\n%s", re, w.String())
		case <-deadline:
			t.Fatalf("taskd did not log %q within a minute:\n%s", re, w.String())
		}
	}
}

// when returns a channel closed once the log matches re; it stops
// watching when stop is closed.
func (w *logWatch) when(re *regexp.Regexp, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			w.mu.Lock()
			m := re.MatchString(w.buf.String())
			ch := w.changed
			w.mu.Unlock()
			if m {
				return
			}
			select {
			case <-ch:
			case <-stop:
				return
			}
		}
	}()
	return done
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// taskd is a taskd running in this process.
type taskd struct {
	api, http, etcd string
	log             *logWatch
	exited          chan struct{}
	code            int
	stop            context.CancelFunc
}

var (
	runningRE = regexp.MustCompile(`taskd running: .*api=(\S+) .*http=(\S+)`)
	etcdRE    = regexp.MustCompile(`embedded etcd ready: .*client_url=(\S+)`)
)

// startTaskd runs taskd with args (plus a temporary data directory and
// free ports unless args name them) until the test ends, and waits until it
// runs.
func startTaskd(t *testing.T, args ...string) *taskd {
	t.Helper()
	d := launchTaskd(t, args...)
	m := d.log.wait(t, runningRE, d.exited)
	d.api, d.http = m[1], m[2]
	if m := etcdRE.FindStringSubmatch(d.log.String()); m != nil {
		d.etcd = m[1]
	}
	t.Cleanup(func() {
		d.stop()
		<-d.exited
		if d.code != 0 {
			t.Errorf("taskd exit code %d:\n%s", d.code, d.log)
		}
	})
	return d
}

// launchTaskd starts taskd without waiting for anything.
func launchTaskd(t *testing.T, args ...string) *taskd {
	t.Helper()
	all := []string{"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0",
		"--etcd-listen", "http://127.0.0.1:0", "--lease-ttl", "2s", "--handoff-start", "0s", "--drain-timeout", "0s"}
	all = append(all, args...)
	ctx, cancel := context.WithCancel(context.Background())
	d := &taskd{log: newLogWatch(), exited: make(chan struct{}), stop: cancel}
	go func() {
		defer close(d.exited)
		d.code = run(ctx, all, nil, io.Discard, d.log)
	}()
	return d
}

// dial connects to addr with the given client TLS and checks its health;
// it returns the serial of the server certificate seen, and the error.
func dial(t *testing.T, addr string, c *tls.Config) (serial string, err error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(c)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var p peer.Peer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p))
	if err != nil {
		return "", err
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		t.Fatalf("peer auth info %T, want TLS", p.AuthInfo)
	}
	return info.State.PeerCertificates[0].SerialNumber.String(), nil
}

// clientTLS trusts roots and presents pair (if not nil).
func clientTLS(roots *devcerts.CA, pair *devcerts.Pair) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(roots.Cert)
	c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if pair != nil {
		cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
		if err != nil {
			panic(err)
		}
		// Presented whatever CAs the server asks for: Go's client would
		// otherwise keep back a certificate from another CA.
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return c
}

// readAfterHandshake completes a TLS 1.3 handshake with addr and reads
// without writing anything, so that the server's verdict on the client
// certificate arrives as an alert; it returns the handshake or read error.
func readAfterHandshake(addr string, c *tls.Config) error {
	c.MinVersion = tls.VersionTLS13
	conn, err := tls.Dial("tcp", addr, c)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Read(make([]byte, 1))
	return err
}

// tls12 caps c at TLS 1.2.
func tls12(c *tls.Config) *tls.Config {
	c.MaxVersion = tls.VersionTLS12
	return c
}

// TestTLSHandshakes: a taskd with --tls-cert and --tls-client-ca serves its
// gRPC API and HTTP endpoint to a client with a certificate from its CA
// only; every refusal is UNAVAILABLE (a failed handshake, as grpc-go
// reports it) with the certificate problem in the message. Then the pair is
// replaced by an expired one and by a new one: each is served to new
// connections after SIGHUP, without a restart.
func TestTLSHandshakes(t *testing.T) {
	good, other := newPKI(t, "taskd test CA"), newPKI(t, "some other CA")
	server := good.issue("node-1", devcerts.LeafOptions{})
	certFile, keyFile := good.write(server, "node")
	client := good.issue("client", devcerts.LeafOptions{})
	strangerClient := other.issue("stranger", devcerts.LeafOptions{})
	d := startTaskd(t, "--name", "tls-1", "--tls-cert", certFile, "--tls-key", keyFile, "--tls-client-ca", good.caFile)

	serial := server.Cert.SerialNumber.String()
	cases := []struct {
		name     string
		tls      *tls.Config
		wantCode codes.Code
		wantMsg  string
	}{
		{"trusted CA and client certificate", clientTLS(good.ca, client), codes.OK, ""},
		{"trusted CA and client certificate, TLS 1.2", tls12(clientTLS(good.ca, client)), codes.OK, ""},
		{"server certificate from an unknown CA", clientTLS(other.ca, client), codes.Unavailable, "certificate signed by unknown authority"},
		// A TLS 1.3 client finishes its side of the handshake before the
		// server checks its certificate, so the server's alert races the
		// client's first write: grpc-go reports either the alert or a
		// broken connection, always as UNAVAILABLE. The alert itself is
		// checked below, on a connection that only reads.
		{"no client certificate", clientTLS(good.ca, nil), codes.Unavailable, ""},
		{"client certificate from another CA", clientTLS(good.ca, strangerClient), codes.Unavailable, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dial(t, d.api, tc.tls)
			if code := status.Code(err); code != tc.wantCode {
				t.Fatalf("code %v (%v), want %v", code, err, tc.wantCode)
			}
			if tc.wantCode == codes.OK {
				if got != serial {
					t.Fatalf("server certificate serial %s, want %s", got, serial)
				}
				return
			}
			if !strings.Contains(status.Convert(err).Message(), tc.wantMsg) {
				t.Fatalf("message %q does not mention %q", status.Convert(err).Message(), tc.wantMsg)
			}
		})
	}

	t.Run("alert for a client certificate problem", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			tls  *tls.Config
			want string
		}{
			{"no client certificate", clientTLS(good.ca, nil), "remote error: tls: certificate required"},
			{"client certificate from another CA", clientTLS(good.ca, strangerClient), "remote error: tls: unknown certificate authority"},
		} {
			for port, addr := range map[string]string{"API": d.api, "HTTP": d.http} {
				if err := readAfterHandshake(addr, tc.tls); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s, %s port: %v, want %q", tc.name, port, err, tc.want)
				}
			}
		}
	})

	t.Run("HTTP endpoint", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			tls     *tls.Config
			wantErr string
		}{
			{"with a client certificate", clientTLS(good.ca, client), ""},
			{"server certificate from an unknown CA", clientTLS(other.ca, client), "certificate signed by unknown authority"},
		} {
			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc.tls}}
			resp, err := hc.Get("https://" + d.http + "/metrics")
			hc.CloseIdleConnections()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.wantErr)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.TLS.PeerCertificates[0].SerialNumber.String() != serial {
				t.Fatalf("%s: status %d, serial %s; want 200 from serial %s", tc.name, resp.StatusCode,
					resp.TLS.PeerCertificates[0].SerialNumber, serial)
			}
		}
	})

	// reload replaces the pair and sends SIGHUP; the reload is in effect
	// once its log line names the new serial (the file check may get there
	// first, which is as good).
	reload := func(pair *devcerts.Pair) {
		good.write(pair, "node")
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		d.log.wait(t, regexp.MustCompile(`TLS certificate reloaded: .*serial=`+pair.Cert.SerialNumber.String()), d.exited)
	}

	t.Run("reload to an expired certificate", func(t *testing.T) {
		now := time.Now()
		expired := good.issue("node-1", devcerts.LeafOptions{NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-24 * time.Hour)})
		reload(expired)
		_, err := dial(t, d.api, clientTLS(good.ca, client))
		if code := status.Code(err); code != codes.Unavailable {
			t.Fatalf("code %v (%v), want Unavailable", code, err)
		}
		if msg := status.Convert(err).Message(); !strings.Contains(msg, "certificate has expired") {
			t.Fatalf("message %q does not mention the expired certificate", msg)
		}
	})

	t.Run("reload to a new certificate", func(t *testing.T) {
		renewed := good.issue("node-1", devcerts.LeafOptions{})
		reload(renewed)
		got, err := dial(t, d.api, clientTLS(good.ca, client))
		if err != nil {
			t.Fatal(err)
		}
		if want := renewed.Cert.SerialNumber.String(); got != want {
			t.Fatalf("server certificate serial %s after reload, want %s", got, want)
		}
	})
}

// TestTLSProbeOfPreviousIncarnation: a second process started under the
// name of a live TLS node probes it over TLS with the node's own
// certificate, finds it live and refuses to start. A plain-text probe
// would fail the handshake, find nothing, and replace the live node.
func TestTLSProbeOfPreviousIncarnation(t *testing.T) {
	p := newPKI(t, "taskd test CA")
	certFile, keyFile := p.write(p.issue("node", devcerts.LeafOptions{}), "node")
	tlsArgs := []string{"--tls-cert", certFile, "--tls-key", keyFile, "--tls-client-ca", p.caFile}
	first := startTaskd(t, append([]string{"--name", "same"}, tlsArgs...)...)

	second := launchTaskd(t, append([]string{"--name", "same", "--etcd", first.etcd}, tlsArgs...)...)
	select {
	case <-second.exited:
	case <-second.log.when(runningRE, second.exited):
		second.stop()
		<-second.exited
		t.Fatalf("a second process took the name of a live node:\n%s", second.log)
	}
	if second.code != 1 || !strings.Contains(second.log.String(), "held by a live process") {
		t.Fatalf("second process under the same name: exit %d, log:\n%s\nwant exit 1: the name is held by a live process", second.code, second.log)
	}
}

// TestEtcdTLS: the embedded etcd on an https URL serves the node's
// certificate and requires client certificates from --tls-client-ca; the
// node itself connects with its own pair, another node with --etcd-ca,
// --etcd-cert and --etcd-key, and a client without a certificate is
// refused in the handshake.
func TestEtcdTLS(t *testing.T) {
	p := newPKI(t, "taskd test CA")
	certFile, keyFile := p.write(p.issue("node", devcerts.LeafOptions{}), "node")
	first := startTaskd(t, "--name", "etcd-tls-1", "--etcd-listen", "https://127.0.0.1:0",
		"--tls-cert", certFile, "--tls-key", keyFile, "--tls-client-ca", p.caFile)
	if !strings.HasPrefix(first.etcd, "https://") {
		t.Fatalf("embedded etcd URL %q, want https", first.etcd)
	}
	etcdCert, etcdKey := p.write(p.issue("etcd-client", devcerts.LeafOptions{}), "etcd-client")
	startTaskd(t, "--name", "etcd-tls-2", "--etcd", first.etcd,
		"--etcd-ca", p.caFile, "--etcd-cert", etcdCert, "--etcd-key", etcdKey)

	conn, err := tls.Dial("tcp", strings.TrimPrefix(first.etcd, "https://"), clientTLS(p.ca, nil))
	if err != nil {
		t.Fatal(err) // TLS 1.3: the client side of the handshake completes
	}
	defer conn.Close()
	_, err = conn.Read(make([]byte, 1))
	if err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("read from the embedded etcd without a client certificate: %v, want certificate required", err)
	}
}

// TestEtcdAuth: with etcd's authentication on, a node with --etcd-user and
// the right --etcd-password-file runs, and a wrong password stops start-up
// with etcd's refusal.
func TestEtcdAuth(t *testing.T) {
	srv, err := etcdembed.Start(context.Background(), etcdembed.Config{Dir: t.TempDir(), ClientURL: "http://127.0.0.1:0", Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	enableAuth(t, srv.ClientURL(), "s3cret")

	dir := t.TempDir()
	right, wrong := filepath.Join(dir, "right"), filepath.Join(dir, "wrong")
	if err := os.WriteFile(right, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrong, []byte("guess\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	func() {
		d := launchTaskd(t, "--name", "auth-wrong", "--etcd", srv.ClientURL(), "--etcd-user", "root", "--etcd-password-file", wrong)
		<-d.exited
		if d.code != 1 || !strings.Contains(d.log.String(), "authentication failed") {
			t.Fatalf("wrong password: exit %d, log:\n%s\nwant exit 1 with etcd's authentication failure", d.code, d.log)
		}
	}()
	d := launchTaskd(t, "--name", "auth-right", "--etcd", srv.ClientURL(), "--etcd-user", "root", "--etcd-password-file", right)
	d.log.wait(t, runningRE, d.exited)
	d.stop()
	<-d.exited
	if d.code != 0 {
		t.Fatalf("exit %d:\n%s", d.code, d.log)
	}
}

// enableAuth adds etcd's root user with password and turns auth on.
func enableAuth(t *testing.T, url, password string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.UserAdd(ctx, "root", password); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(fmt.Errorf("enable etcd auth: %w", err))
	}
}

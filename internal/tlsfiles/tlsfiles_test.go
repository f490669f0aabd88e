package tlsfiles

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/taskd/taskd/internal/devcerts"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReloadIfChanged: an unchanged pair is not reloaded; a replaced pair
// is; a half-written pair (a key that does not match) fails and leaves the
// previous certificate in use.
func TestReloadIfChanged(t *testing.T) {
	ca, err := devcerts.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	issue := func() *devcerts.Pair {
		p, err := ca.Issue("node", devcerts.LeafOptions{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	dir := t.TempDir()
	first := issue()
	certFile, keyFile, err := first.Write(dir, "node")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReloader(ServerFiles{Cert: certFile, Key: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	serial := func() string { return r.Certificate().SerialNumber.String() }
	if changed, err := r.ReloadIfChanged(); changed || err != nil {
		t.Fatalf("unchanged files: reloaded %v, error %v", changed, err)
	}

	// The modification time is set explicitly so that the change shows
	// whatever the file system's time resolution.
	touch := func(at time.Time) {
		for _, f := range []string{certFile, keyFile} {
			if err := os.Chtimes(f, at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	second := issue()
	if _, _, err := second.Write(dir, "node"); err != nil {
		t.Fatal(err)
	}
	touch(time.Now().Add(time.Hour))
	if changed, err := r.ReloadIfChanged(); !changed || err != nil {
		t.Fatalf("replaced files: reloaded %v, error %v", changed, err)
	}
	if got, want := serial(), second.Cert.SerialNumber.String(); got != want {
		t.Fatalf("serial %s after reload, want %s", got, want)
	}

	third := issue()
	if err := os.WriteFile(certFile, third.CertPEM, 0o644); err != nil { // the key is still second's
		t.Fatal(err)
	}
	touch(time.Now().Add(2 * time.Hour))
	if changed, err := r.ReloadIfChanged(); changed || err == nil {
		t.Fatalf("mismatched pair: reloaded %v, error %v; want an error", changed, err)
	}
	if got, want := serial(), second.Cert.SerialNumber.String(); got != want {
		t.Fatalf("serial %s after a failed reload, want the previous %s", got, want)
	}
}

// TestClientConfigErrors: wrong client files fail when the configuration
// is built, naming the problem.
func TestClientConfigErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		files ClientFiles
	}{
		{"CA file missing", ClientFiles{CA: filepath.Join(dir, "missing")}},
		{"CA file without PEM", ClientFiles{CA: notPEM}},
		{"certificate without key", ClientFiles{Cert: notPEM}},
		{"pair that does not load", ClientFiles{Cert: notPEM, Key: notPEM}},
	} {
		if _, err := ClientConfig(tc.files); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

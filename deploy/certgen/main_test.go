package main

import (
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/taskd/taskd/internal/tlsfiles"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestWrite: every certificate written loads with its key and verifies
// against the CA written with it, for the names and uses it is for.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	if err := write(dir, []string{"taskd-1"}, []string{"etcd-1"}, []string{"localhost", "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	roots, err := tlsfiles.LoadPool(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, host string
		usage      x509.ExtKeyUsage
		wantOK     bool
	}{
		{"taskd-1", "taskd-1", x509.ExtKeyUsageServerAuth, true},
		{"taskd-1", "127.0.0.1", x509.ExtKeyUsageServerAuth, true},
		{"taskd-1", "", x509.ExtKeyUsageClientAuth, true},
		{"etcd-1", "localhost", x509.ExtKeyUsageServerAuth, true},
		{"etcd-1", "", x509.ExtKeyUsageClientAuth, true},
		{"taskctl", "", x509.ExtKeyUsageClientAuth, true},
		{"taskctl", "", x509.ExtKeyUsageServerAuth, false},
		{"taskd-1", "etcd-1", x509.ExtKeyUsageServerAuth, false},
	} {
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, tc.name+".crt"), filepath.Join(dir, tc.name+".key"))
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: tc.host, KeyUsages: []x509.ExtKeyUsage{tc.usage}})
		if (err == nil) != tc.wantOK {
			t.Errorf("%s for %q, usage %v: verify error %v, want ok %v", tc.name, tc.host, tc.usage, err, tc.wantOK)
		}
	}
}

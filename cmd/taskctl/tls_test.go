package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/taskd/taskd/internal/devcerts"
	"github.com/taskd/taskd/internal/grpcapi"
	"github.com/taskd/taskd/internal/tlsfiles"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestTLS: taskctl reaches a node that serves its API with TLS and
// requires client certificates when given the CA and a client pair, by
// flags or by environment; without them, or trusting another CA, it fails
// with UNAVAILABLE and the reason; with the CA alone, the reason names the
// flags of the client certificate it lacks.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := devcerts.NewCA("taskctl test CA")
	if err != nil {
		t.Fatal(err)
	}
	other, err := devcerts.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	caFile, otherFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "other.crt")
	for f, pem := range map[string][]byte{caFile: ca.CertPEM, otherFile: other.CertPEM} {
		if err := os.WriteFile(f, pem, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	issue := func(cn string) (string, string) {
		pair, err := ca.Issue(cn, devcerts.LeafOptions{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Client: true})
		if err != nil {
			t.Fatal(err)
		}
		cert, key, err := pair.Write(dir, cn)
		if err != nil {
			t.Fatal(err)
		}
		return cert, key
	}
	serverCert, serverKey := issue("node")
	clientCert, clientKey := issue("operator")
	strangerPair, err := other.Issue("stranger", devcerts.LeafOptions{Client: true})
	if err != nil {
		t.Fatal(err)
	}
	strangerCert, strangerKey, err := strangerPair.Write(dir, "stranger")
	if err != nil {
		t.Fatal(err)
	}

	etcd := tst.StartEtcd(t)
	n := tst.StartNode(t, etcd.Client(t), taskservice.Config{Name: "ctl-tls", LeaseTTL: 2 * time.Second})
	r, err := tlsfiles.NewReloader(tlsfiles.ServerFiles{Cert: serverCert, Key: serverKey, ClientCA: caFile})
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(r.ServerConfig("h2"))))
	taskdv1.RegisterTaskServiceServer(gs, grpcapi.NewTaskService(n.Node))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = gs.Serve(lis) }()
	defer func() { gs.Stop(); <-served }()
	addr := lis.Addr().String()

	tlsFlags := []string{"--tls-ca", caFile, "--tls-cert", clientCert, "--tls-key", clientKey}
	cases := []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		wantErr  string
	}{
		{"flags", tlsFlags, nil, exitOK, ""},
		{"environment", nil, map[string]string{envTLSCA: caFile, envTLSCert: clientCert, envTLSKey: clientKey}, exitOK, ""},
		{"flags beat the environment", tlsFlags, map[string]string{envTLSCA: otherFile}, exitOK, ""},
		{"plain text", nil, nil, exitError, "Unavailable"},
		{"another CA", []string{"--tls-ca", otherFile, "--tls-cert", clientCert, "--tls-key", clientKey}, nil, exitError,
			"certificate signed by unknown authority"},
		// The node rejects the missing certificate after the handshake, so
		// the client sees "certificate required", "broken pipe" or "EOF"
		// as its reads and writes race; every one names the flags.
		{"CA without a client certificate", []string{"--tls-ca", caFile}, nil, exitError,
			"(give --tls-cert FILE and --tls-key FILE"},
		{"client certificate of another CA", []string{"--tls-ca", caFile, "--tls-cert", strangerCert, "--tls-key", strangerKey}, nil, exitError,
			"check --tls-ca, --tls-cert and --tls-key"},
		{"certificate without key", []string{"--tls-ca", caFile, "--tls-cert", clientCert}, nil, exitUsage, "needs both"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			// Several times: which error a refused handshake shows is a
			// race between the client's read and write.
			for range 5 {
				code, _, errOut := runCLI(t, append(append([]string{"--addr", addr}, tc.args...), "list", "--identity", "nobody")...)
				if code != tc.wantCode || !strings.Contains(errOut, tc.wantErr) {
					t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", code, errOut, tc.wantCode, tc.wantErr)
				}
			}
		})
	}
}

package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/taskd/taskd/internal/tlsfiles"
	"github.com/taskd/taskd/pkg/config"
	"github.com/taskd/taskd/pkg/etcdembed"
	"github.com/taskd/taskd/pkg/taskservice"
)

// tlsCheckPeriod is how often the certificate files are checked for a
// change (modification time or size); SIGHUP reloads at once.
const tlsCheckPeriod = 5 * time.Second

// serverTLS is the TLS of the node's gRPC API and HTTP endpoint, and of its
// dials to other nodes. The zero value is plain text.
type serverTLS struct {
	reloader *tlsfiles.Reloader // nil: plain text
	peer     *tls.Config        // client side, for dialling other nodes
}

// setupTLS loads --tls-cert, --tls-key and --tls-client-ca. The client side
// for other nodes verifies them with --tls-ca, else --tls-client-ca (a
// cluster's nodes usually share one CA), and presents this node's own
// certificate, which other nodes require when they have --tls-client-ca:
// node certificates are therefore issued for both server and client use.
func setupTLS(cfg config.Config) (serverTLS, error) {
	if cfg.TLSCert == "" {
		return serverTLS{}, nil
	}
	r, err := tlsfiles.NewReloader(tlsfiles.ServerFiles{Cert: cfg.TLSCert, Key: cfg.TLSKey, ClientCA: cfg.TLSClientCA})
	if err != nil {
		return serverTLS{}, fmt.Errorf("--tls-cert: %w", err)
	}
	ca := cfg.TLSCA
	if ca == "" {
		ca = cfg.TLSClientCA
	}
	peer, err := tlsfiles.ClientConfig(tlsfiles.ClientFiles{CA: ca, Cert: cfg.TLSCert, Key: cfg.TLSKey})
	if err != nil {
		return serverTLS{}, fmt.Errorf("TLS for dialling other nodes: %w", err)
	}
	return serverTLS{reloader: r, peer: peer}, nil
}

// grpcOptions are the server options that make the gRPC API serve TLS.
func (s serverTLS) grpcOptions() []grpc.ServerOption {
	if s.reloader == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(s.reloader.ServerConfig("h2")))}
}

// httpListener wraps the HTTP endpoint's listener in TLS when configured.
func (s serverTLS) httpListener(l net.Listener) net.Listener {
	if s.reloader == nil {
		return l
	}
	return tls.NewListener(l, s.reloader.ServerConfig("h2", "http/1.1"))
}

// watch reloads the certificate files on SIGHUP and when they change,
// until the returned stop is called. A pair that does not load is logged
// and the previous one stays in use. SIGHUP is caught from the moment watch
// returns; for plain text nothing is watched and SIGHUP keeps its default
// action.
func (s serverTLS) watch(log hclog.Logger) (stop func()) {
	if s.reloader == nil {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(tlsCheckPeriod)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := s.reloader.Reload(); err != nil {
					log.Error("TLS reload on SIGHUP failed; serving the previous certificate", "error", err)
					continue
				}
				s.logReloaded(log, "SIGHUP")
			case <-tick.C:
				changed, err := s.reloader.ReloadIfChanged()
				if err != nil {
					log.Error("TLS files changed but do not load; serving the previous certificate", "error", err)
				} else if changed {
					s.logReloaded(log, "file change")
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
		signal.Stop(hup)
	}
}

func (s serverTLS) logReloaded(log hclog.Logger, why string) {
	cert := s.reloader.Certificate()
	log.Info("TLS certificate reloaded", "trigger", why, "serial", cert.SerialNumber.String(),
		"not_after", cert.NotAfter.UTC().Format(time.RFC3339))
}

// embeddedEtcdTLS gives the embedded etcd the node's certificate and client
// CA when its client URL is https.
func embeddedEtcdTLS(cfg config.Config, ec *etcdembed.Config) {
	if strings.HasPrefix(cfg.EtcdListen, "https://") {
		ec.TLSCert, ec.TLSKey, ec.TLSClientCA = cfg.TLSCert, cfg.TLSKey, cfg.TLSClientCA
	}
}

// etcdSecurity builds the etcd client's TLS and authentication from the
// --etcd-* options. TLS is on when any of --etcd-ca, --etcd-cert is set or
// an endpoint is https. For the embedded etcd on an https URL, --etcd-ca
// defaults to --tls-ca or --tls-client-ca, and --etcd-cert/--etcd-key to
// --tls-cert/--tls-key.
func etcdSecurity(cfg config.Config, endpoints []string) (taskservice.EtcdSecurity, error) {
	var sec taskservice.EtcdSecurity
	files := tlsfiles.ClientFiles{CA: cfg.EtcdCA, Cert: cfg.EtcdCert, Key: cfg.EtcdKey}
	if len(cfg.Etcd) == 0 && strings.HasPrefix(cfg.EtcdListen, "https://") {
		// The embedded etcd serves the node's own certificate and client
		// CA: by default the node trusts its CA and presents its pair.
		if files.CA == "" {
			files.CA = cmp.Or(cfg.TLSCA, cfg.TLSClientCA)
		}
		if files.Cert == "" {
			files.Cert, files.Key = cfg.TLSCert, cfg.TLSKey
		}
	}
	https := false
	for _, e := range endpoints {
		https = https || strings.HasPrefix(e, "https://") || strings.HasPrefix(e, "unixs://")
	}
	if files.Set() || https {
		c, err := tlsfiles.ClientConfig(files)
		if err != nil {
			return sec, fmt.Errorf("etcd client TLS: %w", err)
		}
		sec.TLS = c
	}
	if cfg.EtcdUser != "" {
		pw, err := os.ReadFile(cfg.EtcdPasswordFile)
		if err != nil {
			return sec, fmt.Errorf("--etcd-password-file: %w", err)
		}
		sec.Username = cfg.EtcdUser
		sec.Password = strings.TrimSuffix(strings.TrimSuffix(string(pw), "\n"), "\r")
	}
	return sec, nil
}

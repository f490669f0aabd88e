// Package etcdembed starts a single-member etcd inside the process, so that
// one taskd runs with no set-up; tests also use it to run the members of a
// multi-member cluster, one per process. The data directory is guarded by a lock
// file: a second server on the same directory fails at once with a clear
// error, where etcd itself would block forever on bbolt's file lock.
package etcdembed

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Config says where and how to run the embedded etcd.
type Config struct {
	// Dir holds the lock file and etcd's data (in Dir/etcd).
	Dir string
	// ClientURL is the client listen URL, e.g. http://127.0.0.1:2379; port 0
	// picks a free port (read it back from Server.ClientURL).
	ClientURL string
	// Fast shortens raft's tick (10 ms) and election (100 ms) for tests.
	Fast bool
	// ReadyTimeout bounds the wait for the server to become ready.
	ReadyTimeout time.Duration
	// QuotaBytes is etcd's space quota (0: etcd's default of 2 GiB).
	QuotaBytes int64
	// MaxRequestBytes is etcd's --max-request-bytes (0: MaxRequestBytes);
	// tests set it low to make etcd refuse requests for their size.
	MaxRequestBytes uint
	// TLSCert and TLSKey, both set, make the client URL serve TLS with this
	// PEM pair; the ClientURL must then be https. TLSClientCA, when set,
	// makes it require client certificates signed by one of its CAs.
	TLSCert, TLSKey, TLSClientCA string
	// Logger receives etcd's own log (nil: discarded).
	Logger *zap.Logger `json:"-"`

	// The fields below make the server one member of a cluster; left empty,
	// it is a single member named "taskd" whose peer URL is never dialled.

	// Name is the member's name, unique in the cluster.
	Name string
	// PeerURL is the member's peer listen and advertise URL; it must name a
	// port, since the other members dial it and etcd keeps it in its
	// membership across restarts.
	PeerURL string
	// InitialCluster lists every member as "name=peerURL,...", as etcd's
	// --initial-cluster: the same on every member.
	InitialCluster string
	// InitialClusterToken keeps members of different clusters apart: the
	// same on every member of one cluster.
	InitialClusterToken string
	// ClusterState is "new" when the members bootstrap together, "existing"
	// to join a cluster that runs. A member restarted on its data directory
	// recovers its membership from there either way.
	ClusterState string
}

// MaxTxnOps is the embedded server's limit of operations in one Txn.
const MaxTxnOps = 1024

// MaxRequestBytes is the embedded server's limit of one request's encoded
// size (etcd's default --max-request-bytes, 1.5 MiB).
const MaxRequestBytes = 1536 << 10

// Server is a running embedded etcd.
type Server struct {
	closeOnce sync.Once
	etcd      *embed.Etcd
	lock      *os.File
	clientURL string
}

// ErrDirInUse reports a data directory held by another process.
var ErrDirInUse = errors.New("data directory is in use by another taskd")

// Start starts the server and waits until it serves.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", cfg.Dir, err)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	srv, err := start(ctx, cfg)
	if err != nil {
		_ = lock.Close()
		return nil, err
	}
	srv.lock = lock
	return srv, nil
}

func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "taskd.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "unknown"
		}
		return nil, fmt.Errorf("%w: %s is locked (holder pid %s); stop that process or use another --data-dir", ErrDirInUse, dir, who)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

func start(ctx context.Context, cfg Config) (*Server, error) {
	curl, err := url.Parse(cfg.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("parse etcd client URL %q: %w", cfg.ClientURL, err)
	}
	// The peer URL is never dialled by a single member. Port 0 on loopback
	// listens on a free port, never clashes with another server, and reads
	// the same at every restart (etcd keeps it in its membership).
	purl := &url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	if cfg.PeerURL != "" {
		if purl, err = url.Parse(cfg.PeerURL); err != nil {
			return nil, fmt.Errorf("parse etcd peer URL %q: %w", cfg.PeerURL, err)
		}
	}

	ec := embed.NewConfig()
	ec.Name = "taskd"
	if cfg.Name != "" {
		ec.Name = cfg.Name
	}
	ec.Dir = filepath.Join(cfg.Dir, "etcd")
	ec.ListenClientUrls = []url.URL{*curl}
	ec.AdvertiseClientUrls = []url.URL{*curl}
	ec.ListenPeerUrls = []url.URL{*purl}
	ec.AdvertisePeerUrls = []url.URL{*purl}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	if cfg.InitialCluster != "" {
		ec.InitialCluster = cfg.InitialCluster
	}
	if cfg.InitialClusterToken != "" {
		ec.InitialClusterToken = cfg.InitialClusterToken
	}
	if cfg.ClusterState != "" {
		ec.ClusterState = cfg.ClusterState
	}
	if (curl.Scheme == "https") != (cfg.TLSCert != "") {
		return nil, fmt.Errorf("embedded etcd client URL %q: an https URL and a TLS certificate go together", cfg.ClientURL)
	}
	if cfg.TLSCert != "" {
		ec.ClientTLSInfo = transport.TLSInfo{
			CertFile:       cfg.TLSCert,
			KeyFile:        cfg.TLSKey,
			TrustedCAFile:  cfg.TLSClientCA,
			ClientCertAuth: cfg.TLSClientCA != "",
		}
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	ec.LogLevel = "error"
	if cfg.Logger != nil {
		ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(cfg.Logger)
	}
	// Room for a whole schedule batch in one Txn.
	ec.MaxTxnOps = MaxTxnOps
	ec.MaxRequestBytes = MaxRequestBytes
	if cfg.MaxRequestBytes > 0 {
		ec.MaxRequestBytes = cfg.MaxRequestBytes
	}
	// taskd writes a lot: compact history older than five minutes.
	ec.AutoCompactionMode = "periodic"
	ec.AutoCompactionRetention = "5m"
	ec.QuotaBackendBytes = cfg.QuotaBytes
	if cfg.Fast {
		ec.TickMs = 10
		ec.ElectionMs = 100
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd in %s: %w", ec.Dir, err)
	}
	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(timeout):
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s not ready after %s", ec.Dir, timeout)
	case <-ctx.Done():
		e.Close()
		return nil, fmt.Errorf("start embedded etcd: %w", ctx.Err())
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd in %s: %w", ec.Dir, err)
	}
	addr := e.Clients[0].Addr().String()
	return &Server{etcd: e, clientURL: curl.Scheme + "://" + addr}, nil
}

// ClientURL is the URL clients dial (with the real port when 0 was asked).
func (s *Server) ClientURL() string { return s.clientURL }

// Close stops the server and releases the data directory. Close clients of
// the server first: open watch and lease streams make etcd's close slow.
// Close may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.etcd.Close()
		<-s.etcd.Server.StopNotify()
		if s.lock != nil {
			_ = s.lock.Close()
		}
	})
}

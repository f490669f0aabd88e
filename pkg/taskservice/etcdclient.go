package taskservice

import (
	"crypto/tls"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
)

// EtcdSecurity is how a node's etcd client proves itself and checks the
// servers. The zero value is plain text without authentication.
type EtcdSecurity struct {
	// TLS, when set, is used for every endpoint: its RootCAs verify the
	// servers and its certificate (if any) is presented to them.
	TLS *tls.Config
	// Username and Password authenticate to an etcd with auth enabled;
	// empty Username: no authentication.
	Username, Password string
}

// DialEtcd returns an etcd client set up for a node: quiet, and quick to
// reconnect after an outage (gRPC's default reconnect backoff grows to two
// minutes, which would keep a node away from an etcd that is back). It
// talks plain text without authentication (see DialEtcdSecure); extra dial
// options (interceptors for metrics) are added to the client's.
func DialEtcd(endpoints []string, extra ...grpc.DialOption) (*clientv3.Client, error) {
	return DialEtcdSecure(endpoints, EtcdSecurity{}, extra...)
}

// DialEtcdSecure is DialEtcd with TLS and authentication as sec says.
func DialEtcdSecure(endpoints []string, sec EtcdSecurity, extra ...grpc.DialOption) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		TLS:         sec.TLS,
		Username:    sec.Username,
		Password:    sec.Password,
		DialOptions: append([]grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           grpcbackoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: time.Second,
		})}, extra...),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return cli, nil
}

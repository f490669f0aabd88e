package membership

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// This file tells, at registration, a live holder of the node's name from a
// registration left by a crashed process.
//
// A registration names the incarnation that wrote it and the gRPC address
// it serves on. The process serving a node announces the node's incarnation
// as a gRPC health service (IncarnationHealthService); cmd/taskd does so.
// The previous incarnation is live when its lease is still live and its
// address answers a health check for that very incarnation. Asking for the
// incarnation, not just "is something serving", keeps a new process from
// mistaking itself (or any other process that now has the address) for the
// previous one. A process that does not announce its incarnation (a node
// embedded without it) is never found live, and is replaced as before.

// ErrNameInUse reports that a live process holds the node's name.
var ErrNameInUse = errors.New("the name is held by a live process")

// livenessProbeTimeout bounds the health check of the previous incarnation:
// a crashed process's address refuses at once, an unreachable one costs
// this much of the start-up, not a lease TTL.
const livenessProbeTimeout = time.Second

// IncarnationHealthService is the gRPC health service name under which the
// process serving a node announces the node's incarnation. Registering it
// (with any status) in the node's gRPC health server lets a start under the
// same name refuse to replace this node while it is live.
func IncarnationHealthService(incarnation string) string {
	return "taskd.incarnation." + incarnation
}

// refuseLive returns an error wrapping ErrNameInUse if prev, registered
// under lease, is a live process (see the top of this file), and nil if it
// is stale.
func (m *Member) refuseLive(ctx context.Context, prev *storev1.NodeRecord, lease clientv3.LeaseID) error {
	if lease == 0 || prev.Address == "" || prev.Incarnation == "" {
		return nil
	}
	ttl, err := m.cfg.Client.TimeToLive(ctx, lease)
	if err != nil {
		return fmt.Errorf("node %s: read the lease of incarnation %s: %w", m.cfg.Name, prev.Incarnation, err)
	}
	if ttl.TTL <= 0 {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, livenessProbeTimeout)
	defer cancel()
	if why := probeIncarnation(pctx, prev.Address, prev.Incarnation, m.cfg.PeerTLS); why != "" {
		m.cfg.Logger.Info("previous incarnation does not answer; replacing it", "previous", prev.Incarnation,
			"address", prev.Address, "lease_ttl_left_s", ttl.TTL, "probe", why)
		return nil
	}
	return fmt.Errorf("node %s: %w: incarnation %s answers at %s and its lease is live (%ds left); "+
		"stop it, or take its place with Replace (taskd --replace)",
		m.cfg.Name, ErrNameInUse, prev.Incarnation, prev.Address, ttl.TTL)
}

// probeIncarnation asks the gRPC health service at address about
// incarnation. It returns "" if the process there serves that incarnation
// (whatever its serving status), else why not. It dials with TLS when
// peerTLS is set: the cluster's nodes all serve TLS or none does.
func probeIncarnation(ctx context.Context, address, incarnation string, peerTLS *tls.Config) string {
	creds := insecure.NewCredentials()
	if peerTLS != nil {
		creds = credentials.NewTLS(peerTLS)
	}
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: IncarnationHealthService(incarnation)})
	switch {
	case err == nil:
		return ""
	case status.Code(err) == codes.NotFound:
		return "the process at the address serves another incarnation"
	}
	return err.Error()
}

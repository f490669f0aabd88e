package taskservice_test

import (
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/taskservice"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func clientWithPrefix() []clientv3.OpOption { return []clientv3.OpOption{clientv3.WithPrefix()} }

func statusCode(err error) string { return status.Code(err).String() }

func (e *events) hasIdentity(typ taskservice.EventType, id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.evs {
		if ev.Type == typ && ev.Identity == id {
			return true
		}
	}
	return false
}

// grpcMaxMsg lets a test send and receive requests larger than gRPC's
// default 4 MiB.
func grpcMaxMsg() grpc.CallOption { return grpc.MaxCallSendMsgSize(64 << 20) }

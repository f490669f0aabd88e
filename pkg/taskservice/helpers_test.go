package taskservice_test

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
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

// apiCtx is the context of one test's calls.
func apiCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// apiSpec is a valid durable task for id that does not fire during a test
// (a once trigger an hour from now).
func apiSpec(id string) *taskdv1.TaskSpec {
	return &taskdv1.TaskSpec{
		Identity: id,
		Kind:     "noop",
		Scope:    taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{Delay: durationpb.New(time.Hour)}}}},
	}
}

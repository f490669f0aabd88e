package grpcapi_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/pkg/taskservice"
	"github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The tests of this package run the TaskService of one real node over a
// real etcd (taskservicetest serves it with NewTaskService): input
// validation (contract §10), batches, paging, idempotency keys, cancel and
// run now, and the identity and node views. This file holds their helpers.

// apiStart starts an etcd and one node "n1" handling the kind "noop", with
// its API on loopback.
func apiStart(t *testing.T) *taskservicetest.Node {
	t.Helper()
	e := taskservicetest.StartEtcd(t)
	cli := e.Client(t)
	return taskservicetest.StartNode(t, cli, taskservice.Config{
		Name: "n1",
		Handlers: map[string]taskservice.Handler{
			"noop": taskservice.HandlerFunc(func(ctx context.Context, r *taskservice.Run) error { return nil }),
		},
	})
}

// apiClient starts a node as apiStart does and returns its client, with
// the context of the test's calls.
func apiClient(t *testing.T) (taskdv1.TaskServiceClient, context.Context) {
	t.Helper()
	return apiStart(t).Client, apiCtx(t)
}

// apiCtx is the context of one test's calls.
func apiCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// apiOnce is a once trigger an hour from now: the task stays SCHEDULED for
// the whole test.
func apiOnce() *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{Delay: durationpb.New(time.Hour)}}}
}

// apiPeriodic is a periodic trigger of the given interval (first fire one
// interval from now).
func apiPeriodic(interval time.Duration) *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(interval)}}}
}

// apiSpec is a valid durable task for id that does not fire during a test.
func apiSpec(id string) *taskdv1.TaskSpec {
	return &taskdv1.TaskSpec{
		Identity: id,
		Kind:     "noop",
		Scope:    taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{apiOnce()},
	}
}

// apiWantCode fails unless err is a status with code and, when field is not
// empty, a message naming field (as "field:").
func apiWantCode(t *testing.T, err error, code codes.Code, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got OK, want %s naming %q", code, field)
	}
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("error %v is not a gRPC status", err)
	}
	if st.Code() != code {
		t.Fatalf("got %s (%q), want %s naming %q", st.Code(), st.Message(), code, field)
	}
	if field != "" && !strings.Contains(st.Message(), field+":") {
		t.Fatalf("message %q does not name the field %q", st.Message(), field)
	}
}

// apiListAll returns every task of id, a page of 1000 at a time.
func apiListAll(ctx context.Context, t *testing.T, c taskdv1.TaskServiceClient, id string) []*taskdv1.Task {
	t.Helper()
	var out []*taskdv1.Task
	token := ""
	for {
		resp, err := c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: id, PageSize: 1000, PageToken: token})
		if err != nil {
			t.Fatalf("ListTasks(%q): %v", id, err)
		}
		out = append(out, resp.Tasks...)
		if resp.NextPageToken == "" {
			return out
		}
		token = resp.NextPageToken
	}
}

// apiWantNothing fails unless id has no task and no mapping.
func apiWantNothing(ctx context.Context, t *testing.T, c taskdv1.TaskServiceClient, id string) {
	t.Helper()
	if tasks := apiListAll(ctx, t, c, id); len(tasks) != 0 {
		t.Errorf("identity %q: %d tasks were stored by rejected requests, e.g. %v", id, len(tasks), tasks[0])
	}
	_, err := c.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: id})
	if status.Code(err) != codes.NotFound {
		t.Errorf("GetIdentity(%q) after rejected requests: got %v, want NotFound (nothing half-written)", id, err)
	}
}

// apiSwapCodec is the proto codec with one twist: in the marshalled request
// it replaces the bytes from by to (same length, so length prefixes stay
// right). It sends what the generated client refuses to marshal: a proto3
// string that is not valid UTF-8.
type apiSwapCodec struct{ from, to []byte }

func (c apiSwapCodec) Marshal(v any) ([]byte, error) {
	b, err := proto.Marshal(v.(proto.Message))
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(b, c.from) {
		return nil, fmt.Errorf("marker %q not in the request", c.from)
	}
	return bytes.ReplaceAll(b, c.from, c.to), nil
}

func (apiSwapCodec) Unmarshal(data []byte, v any) error {
	return proto.Unmarshal(data, v.(proto.Message))
}
func (apiSwapCodec) Name() string { return "proto" }

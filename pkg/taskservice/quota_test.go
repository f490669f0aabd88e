package taskservice_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/etcdembed"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// When etcd's space quota is hit, a write is RESOURCE_EXHAUSTED, nothing is
// half-written, and the node keeps serving reads (contract §10).
func TestSpaceQuotaIsResourceExhausted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: filepath.Join(t.TempDir(), "etcd"),
		ClientURL: "http://127.0.0.1:0", Fast: true, QuotaBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cli, err := taskservice.DialEtcd([]string{srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	rec := &recorder{}
	n := tst.StartNode(t, cli, taskservice.Config{Name: "q", Handlers: map[string]taskservice.Handler{"rec": rec}})
	h := &harness{t: t, node: n, rec: rec}
	kept := h.schedule(spec("quota", "rec", after(time.Hour)))

	// Fill etcd past its quota from outside taskd.
	big := string(make([]byte, 512<<10))
	for i := 0; ; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("/filler/%d", i), big); err != nil {
			break
		}
		if i > 100 {
			t.Fatal("etcd never reported its quota")
		}
	}
	_, err = n.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec("quota", "rec", after(time.Hour))})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("schedule over quota: %v, want ResourceExhausted", err)
	}
	// Reads go on.
	if got := h.get("quota", kept.Id); got.Id != kept.Id {
		t.Fatalf("get after quota: %v", got)
	}
	list, err := n.Client.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "quota"})
	if err != nil || len(list.Tasks) != 1 {
		t.Fatalf("list after quota: %v (%v), want the one task stored before", list.GetTasks(), err)
	}
}

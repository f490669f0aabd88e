package taskservice_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func freeURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("http://%s", l.Addr())
}

// An external etcd stopped under a running node: writes get UNAVAILABLE
// within the etcd call deadline, nothing is half-written, and when etcd
// returns the node carries on with every task it had.
func TestEtcdOutageGivesUnavailableAndRecovers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	url := freeURL(t)
	etcd := tst.StartEtcdProcess(t, dir, url)
	cli, err := taskservice.DialEtcd([]string{url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	rec := &recorder{}
	n := tst.StartNode(t, cli, taskservice.Config{
		Name: "n1", LeaseTTL: 2 * time.Second, EtcdTimeout: 500 * time.Millisecond,
		Handlers: map[string]taskservice.Handler{"rec": rec},
	})
	h := &harness{t: t, node: n, rec: rec}
	before := h.schedule(spec("o", "rec", after(1500*time.Millisecond)))
	periodic := h.schedule(spec("o", "rec", every(time.Now(), 100*time.Millisecond, 0)))
	tst.Eventually(t, 10*time.Second, func() bool { return len(rec.of(periodic.Id)) >= 1 }, "the periodic task to run")

	etcd.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = n.Client.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: spec("o", "rec", now())})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("schedule with etcd down: %v, want Unavailable", err)
	}
	_, err = n.Client.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "o", TaskId: before.Id})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("cancel with etcd down: %v, want Unavailable", err)
	}
	runsDuringOutage := len(rec.of(periodic.Id))

	tst.StartEtcdProcess(t, dir, url)
	// The one-shot due during the outage runs once etcd is back.
	h.waitState("o", before.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if n := len(rec.of(before.Id)); n != 1 {
		t.Errorf("one-shot ran %d times, want 1", n)
	}
	tst.Eventually(t, 10*time.Second, func() bool { return len(rec.of(periodic.Id)) >= runsDuringOutage+2 },
		"the periodic task to go on")
	after := h.schedule(spec("o", "rec", now()))
	h.waitState("o", after.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	// Nothing half-written: the identity has exactly the three tasks accepted.
	resp, err := n.Client.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "o"})
	if err != nil || len(resp.Tasks) != 3 {
		t.Fatalf("tasks after the outage: %v (%v), want 3", resp.GetTasks(), err)
	}
	if n.State() != taskdv1.NodeState_NODE_STATE_RUNNING {
		t.Errorf("node state %s after the outage", n.State())
	}
}

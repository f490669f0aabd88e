package taskservice_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// listAll pages through a cross-identity listing.
func listAll(t *testing.T, n *tst.Node, req *taskdv1.ListTasksRequest) []*taskdv1.Task {
	t.Helper()
	var out []*taskdv1.Task
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatal("listing does not end")
		}
		ctx, cancel := rpc()
		resp, err := n.Client.ListTasks(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("ListTasks: %v", err)
		}
		out = append(out, resp.Tasks...)
		if resp.NextPageToken == "" {
			return out
		}
		req.PageToken = resp.NextPageToken
	}
}

// TestListTasksFilters: without an identity, ListTasks finds tasks of
// every identity, filtered by state, kind, label and node, a page at a
// time, each task once; bad filters are refused naming the field.
func TestListTasksFilters(t *testing.T) {
	h := newHarness(t, func(c *taskservice.Config) {
		c.Handlers["email"] = taskservice.HandlerFunc(func(ctx context.Context, r *taskservice.Run) error {
			return errors.New("smtp down") // retryable: with max_attempts 1 the task is DEAD
		})
	})
	var want []string
	for i := 0; i < 7; i++ {
		s := spec("user-"+string(rune('a'+i)), "email", now())
		s.MaxAttempts = 1
		s.Labels = map[string]string{"team": []string{"red", "blue"}[i%2]}
		want = append(want, h.schedule(s).Id)
	}
	later := h.schedule(spec("user-z", "rec", after(time.Hour)))
	for i, id := range want {
		h.waitState("user-"+string(rune('a'+i)), id, taskdv1.TaskState_TASK_STATE_DEAD)
	}
	dead := listAll(t, h.node, &taskdv1.ListTasksRequest{States: []taskdv1.TaskState{taskdv1.TaskState_TASK_STATE_DEAD}, Kind: "email", PageSize: 2})
	if len(dead) != 7 {
		t.Fatalf("dead email tasks listed: %d, want 7", len(dead))
	}
	seen := map[string]bool{}
	for _, d := range dead {
		if seen[d.Id] || d.State != taskdv1.TaskState_TASK_STATE_DEAD {
			t.Fatalf("listing repeats %s or lists state %v", d.Id, d.State)
		}
		seen[d.Id] = true
	}
	red := listAll(t, h.node, &taskdv1.ListTasksRequest{Labels: map[string]string{"team": "red"}})
	if len(red) != 4 {
		t.Fatalf("team=red listed %d, want 4", len(red))
	}
	sched := listAll(t, h.node, &taskdv1.ListTasksRequest{States: []taskdv1.TaskState{taskdv1.TaskState_TASK_STATE_SCHEDULED}})
	if len(sched) != 1 || sched[0].Id != later.Id {
		t.Fatalf("scheduled tasks %v, want only %s", sched, later.Id)
	}
	mine := listAll(t, h.node, &taskdv1.ListTasksRequest{Node: "n1"})
	none := listAll(t, h.node, &taskdv1.ListTasksRequest{Node: "elsewhere"})
	if len(mine) != 8 || len(none) != 0 {
		t.Fatalf("node n1 lists %d (want 8), node elsewhere %d (want 0)", len(mine), len(none))
	}
	ctx, cancel := rpc()
	defer cancel()
	if _, err := h.node.Client.ListTasks(ctx, &taskdv1.ListTasksRequest{PageToken: "garbage!"}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad page token: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := h.node.Client.ListTasks(ctx, &taskdv1.ListTasksRequest{States: []taskdv1.TaskState{42}}); status.Code(err) != codes.InvalidArgument || !contains(err.Error(), "states[0]") {
		t.Fatalf("bad state: %v, want INVALID_ARGUMENT naming states[0]", err)
	}
}

package grpcapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/pkg/pending"
	"github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func TestOtherCallsValidate(t *testing.T) {
	c, ctx := apiClient(t)

	// A real task, so that "exists" and "does not exist" differ only in id.
	sched, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: apiSpec("carol")})
	if err != nil {
		t.Fatalf("ScheduleTask: %v", err)
	}
	realID := sched.Task.Id
	missing := pending.NewIDSource().New()
	if !pending.ValidTaskID(missing) || missing == realID {
		t.Fatalf("bad test id %q", missing)
	}

	type call func(id, taskID string) error
	calls := map[string]call{
		"GetTask": func(id, taskID string) error {
			_, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: id, TaskId: taskID})
			return err
		},
		"CancelTask": func(id, taskID string) error {
			_, err := c.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: id, TaskId: taskID})
			return err
		},
		"RunTaskNow": func(id, taskID string) error {
			_, err := c.RunTaskNow(ctx, &taskdv1.RunTaskNowRequest{Identity: id, TaskId: taskID})
			return err
		},
		"ListRuns": func(id, taskID string) error {
			_, err := c.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: id, TaskId: taskID})
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			apiWantCode(t, call("", realID), codes.InvalidArgument, "identity")
			apiWantCode(t, call(strings.Repeat("x", 257), realID), codes.InvalidArgument, "identity")
			apiWantCode(t, call("ctl\x01", realID), codes.InvalidArgument, "identity")
			for _, bad := range []string{"", "nope", realID + "0", "0123456789ABCDEFGHJKMNPQRS", "8" + realID[1:], realID[:25] + "u"} {
				apiWantCode(t, call("carol", bad), codes.InvalidArgument, "task_id")
			}
			apiWantCode(t, call("carol", missing), codes.NotFound, "")
			// The task exists, but not under this identity.
			apiWantCode(t, call("dave", realID), codes.NotFound, "")
		})
	}
	// Nothing above touched the real task.
	got, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: "carol", TaskId: realID})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if got.Task.State != taskdv1.TaskState_TASK_STATE_SCHEDULED || got.Task.Revision != sched.Task.Revision {
		t.Fatalf("the task changed: %v", got.Task)
	}

	for _, size := range []int32{-1, 1001} {
		_, err := c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "carol", PageSize: size})
		apiWantCode(t, err, codes.InvalidArgument, "page_size")
	}
	for _, size := range []int32{0, 1, 1000} {
		resp, err := c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "carol", PageSize: size})
		if err != nil || len(resp.Tasks) != 1 {
			t.Fatalf("ListTasks page_size %d: %v, %v", size, resp, err)
		}
	}
	for _, tok := range []string{"garbage", "not a token", realID + "x"} {
		_, err := c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "carol", PageToken: tok})
		apiWantCode(t, err, codes.InvalidArgument, "page_token")
	}
	// (An empty identity lists the whole cluster: list_test.go.)
	_, err = c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "bad\x01identity"})
	apiWantCode(t, err, codes.InvalidArgument, "identity")

	_, err = c.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: "never-used"})
	apiWantCode(t, err, codes.NotFound, "")
	_, err = c.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: ""})
	apiWantCode(t, err, codes.InvalidArgument, "identity")
	// The lookups wrote nothing either.
	apiWantNothing(ctx, t, c, "dave")
}

func TestListTasksPaging(t *testing.T) {
	c, ctx := apiClient(t)

	const n = 25
	var want []string
	for i := range n {
		s := apiSpec("pager")
		s.Payload = []byte(fmt.Sprint(i))
		resp, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
		if err != nil {
			t.Fatalf("ScheduleTask %d: %v", i, err)
		}
		want = append(want, resp.Task.Id)
	}
	// Another identity's tasks must not leak into the pages.
	if _, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: apiSpec("pager2")}); err != nil {
		t.Fatalf("ScheduleTask: %v", err)
	}

	var got []string
	seen := map[string]bool{}
	token := ""
	pages := 0
	for {
		resp, err := c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "pager", PageSize: 10, PageToken: token})
		if err != nil {
			t.Fatalf("ListTasks page %d: %v", pages+1, err)
		}
		pages++
		if pages > 3 {
			t.Fatalf("more than 3 pages of 10 for %d tasks", n)
		}
		wantLen := 10
		if pages == 3 {
			wantLen = 5
		}
		if len(resp.Tasks) != wantLen {
			t.Fatalf("page %d has %d tasks, want %d", pages, len(resp.Tasks), wantLen)
		}
		for _, task := range resp.Tasks {
			if seen[task.Id] {
				t.Fatalf("task %s listed twice", task.Id)
			}
			seen[task.Id] = true
			if task.Spec.GetIdentity() != "pager" {
				t.Fatalf("task %s of %q listed for pager", task.Id, task.Spec.GetIdentity())
			}
			got = append(got, task.Id)
		}
		if resp.NextPageToken == "" {
			break
		}
		token = resp.NextPageToken
	}
	if pages != 3 {
		t.Fatalf("%d pages, want 3 (the last page has an empty next_page_token)", pages)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("listed\n%v\nwant creation order\n%v", got, want)
	}
	for i := 1; i < len(got); i++ {
		if got[i-1] >= got[i] {
			t.Fatalf("ids not increasing: %s then %s", got[i-1], got[i])
		}
	}

	// A page that ends exactly at the last task says there is no more.
	resp, err := c.ListTasks(ctx, &taskdv1.ListTasksRequest{Identity: "pager", PageSize: n})
	if err != nil || len(resp.Tasks) != n || resp.NextPageToken != "" {
		t.Fatalf("one page of %d: %d tasks, token %q, err %v", n, len(resp.GetTasks()), resp.GetNextPageToken(), err)
	}
}

func TestCancelAndRunNowStates(t *testing.T) {
	c, ctx := apiClient(t)

	// Cancel.
	s := apiSpec("grace")
	s.Triggers = []*taskdv1.Trigger{apiPeriodic(time.Hour)}
	r, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
	if err != nil {
		t.Fatalf("ScheduleTask: %v", err)
	}
	id := r.Task.Id
	c1, err := c.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "grace", TaskId: id})
	if err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	if c1.Task.State != taskdv1.TaskState_TASK_STATE_CANCELED || c1.Task.FinishedAt == nil || c1.Task.NextFireTime != nil {
		t.Fatalf("cancelled task: state %s, finished_at %v, next_fire_time %v", c1.Task.State, c1.Task.FinishedAt, c1.Task.NextFireTime)
	}
	c2, err := c.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: "grace", TaskId: id})
	if err != nil {
		t.Fatalf("second CancelTask: %v", err)
	}
	if !proto.Equal(c1.Task, c2.Task) {
		t.Fatalf("a second cancel changed the task:\n%v\nthen\n%v", c1.Task, c2.Task)
	}
	_, err = c.RunTaskNow(ctx, &taskdv1.RunTaskNowRequest{Identity: "grace", TaskId: id})
	apiWantCode(t, err, codes.FailedPrecondition, "")
	g, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: "grace", TaskId: id})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if !proto.Equal(g.Task, c1.Task) {
		t.Fatalf("the refused run-now changed the cancelled task:\n%v\nthen\n%v", c1.Task, g.Task)
	}
	if runs, err := c.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: "grace", TaskId: id}); err != nil || len(runs.Runs) != 0 {
		t.Fatalf("the cancelled task has runs %v (err %v)", runs.GetRuns(), err)
	}

	// Run now.
	s = apiSpec("grace")
	s.Triggers = []*taskdv1.Trigger{apiPeriodic(time.Hour)}
	r, err = c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: s})
	if err != nil {
		t.Fatalf("ScheduleTask: %v", err)
	}
	id = r.Task.Id
	before, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: "grace", TaskId: id})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	nft := before.Task.NextFireTime
	if nft == nil || nft.AsTime().Before(time.Now().Add(50*time.Minute)) {
		t.Fatalf("a periodic task of 1h fires next at %v", nft)
	}
	if _, err := c.RunTaskNow(ctx, &taskdv1.RunTaskNowRequest{Identity: "grace", TaskId: id}); err != nil {
		t.Fatalf("RunTaskNow: %v", err)
	}
	var runs []*taskdv1.Run
	taskservicetest.Eventually(t, 20*time.Second, func() bool {
		resp, err := c.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: "grace", TaskId: id})
		if err != nil {
			t.Fatalf("ListRuns: %v", err)
		}
		runs = resp.Runs
		return len(runs) > 0
	}, "a run of the task after RunTaskNow")
	if len(runs) != 1 {
		t.Fatalf("%d runs after one RunTaskNow: %v", len(runs), runs)
	}
	run := runs[0]
	if !run.Manual || run.Outcome != taskdv1.Outcome_OUTCOME_SUCCESS || run.RunNumber != 1 || run.Node != "n1" || run.TaskId != id {
		t.Fatalf("the run: %v", run)
	}
	after, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: "grace", TaskId: id})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if !proto.Equal(after.Task.NextFireTime, nft) {
		t.Fatalf("next_fire_time moved from %v to %v after a manual run", nft.AsTime(), after.Task.NextFireTime.AsTime())
	}
	if after.Task.State != taskdv1.TaskState_TASK_STATE_SCHEDULED || after.Task.RunCount != 1 ||
		after.Task.LastRun.GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Fatalf("after the manual run: state %s, run_count %d, last_run %v", after.Task.State, after.Task.RunCount, after.Task.LastRun)
	}
	// The history is committed with the record: still exactly one run.
	resp, err := c.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: "grace", TaskId: id})
	if err != nil || len(resp.Runs) != 1 {
		t.Fatalf("runs after the manual run: %v (err %v)", resp.GetRuns(), err)
	}
}

func TestGetIdentityAndListNodes(t *testing.T) {
	node := apiStart(t)
	c := node.Client
	ctx := apiCtx(t)

	const n = 3
	for range n {
		if _, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: apiSpec("alice")}); err != nil {
			t.Fatalf("ScheduleTask: %v", err)
		}
	}
	gi, err := c.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: "alice"})
	if err != nil {
		t.Fatalf("GetIdentity: %v", err)
	}
	id := gi.Identity
	if id.GetIdentity() != "alice" || !id.Mapped || id.Node != "n1" || id.Epoch <= 0 || id.TaskCount != n {
		t.Fatalf("GetIdentity(alice) = %v; want mapped to n1 with an epoch and %d tasks", id, n)
	}

	ln, err := c.ListNodes(ctx, &taskdv1.ListNodesRequest{})
	if err != nil {
		t.Fatalf("ListNodes: %v", err)
	}
	if len(ln.Nodes) != 1 {
		t.Fatalf("ListNodes = %v, want n1 only", ln.Nodes)
	}
	nd := ln.Nodes[0]
	switch {
	case nd.Name != "n1":
		t.Fatalf("node name %q", nd.Name)
	case nd.State != taskdv1.NodeState_NODE_STATE_RUNNING:
		t.Fatalf("node state %s", nd.State)
	case nd.Address != node.Addr:
		t.Fatalf("node address %q, want %q", nd.Address, node.Addr)
	case nd.Incarnation == "" || nd.Incarnation != node.Incarnation():
		t.Fatalf("node incarnation %q, want %q", nd.Incarnation, node.Incarnation())
	case nd.StartedAt == nil:
		t.Fatal("node started_at unset")
	case nd.DispatchStart == nil || nd.DispatchStart.AsTime().IsZero():
		t.Fatal("node dispatch_start unset while RUNNING")
	case nd.DispatchStart.AsTime().Before(nd.StartedAt.AsTime()):
		t.Fatalf("dispatch_start %v before started_at %v", nd.DispatchStart.AsTime(), nd.StartedAt.AsTime())
	case !nd.DispatchStart.AsTime().Equal(node.DispatchStart()):
		t.Fatalf("dispatch_start %v, the node says %v", nd.DispatchStart.AsTime(), node.DispatchStart())
	case nd.IdentitiesOwned < 1:
		t.Fatalf("identities_owned %d, want at least 1 (alice)", nd.IdentitiesOwned)
	case len(nd.Kinds) != 1 || nd.Kinds[0] != "noop":
		t.Fatalf("kinds %v, want [noop]", nd.Kinds)
	}
}

func TestIdentityKeysDoNotCollide(t *testing.T) {
	c, ctx := apiClient(t)

	ids := []string{"bob", "bob.x", "bob/x", "bob%2Fx", "bob%252Fx", "bo", "bob/"}
	taskOf := map[string]string{}
	for _, id := range ids {
		r, err := c.ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: apiSpec(id)})
		if err != nil {
			t.Fatalf("ScheduleTask(%q): %v", id, err)
		}
		taskOf[id] = r.Task.Id
	}
	for _, id := range ids {
		tasks := apiListAll(ctx, t, c, id)
		if len(tasks) != 1 || tasks[0].Id != taskOf[id] || tasks[0].Spec.GetIdentity() != id {
			var got []string
			for _, task := range tasks {
				got = append(got, fmt.Sprintf("%s(%q)", task.Id, task.Spec.GetIdentity()))
			}
			t.Errorf("ListTasks(%q) = %v, want only %s", id, got, taskOf[id])
		}
		gi, err := c.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: id})
		if err != nil {
			t.Errorf("GetIdentity(%q): %v", id, err)
			continue
		}
		if gi.Identity.TaskCount != 1 || gi.Identity.Identity != id || !gi.Identity.Mapped {
			t.Errorf("GetIdentity(%q) = %v, want mapped with 1 task", id, gi.Identity)
		}
		for _, other := range ids {
			if other == id {
				continue
			}
			if _, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: id, TaskId: taskOf[other]}); status.Code(err) != codes.NotFound {
				t.Errorf("GetTask(%q, task of %q): got %v, want NotFound", id, other, err)
			}
		}
	}
}

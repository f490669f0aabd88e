package console

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The live events come in the stream's order (the cluster's writes),
// whatever their times: a run armed ahead of its fire time has its FIRED
// and STARTED written before it is due, with the fire time as their time,
// and the stream marks them armed so that the page can say why their time
// is later than the rows after them. A manual run's are not marked.
func TestEventStreamMarksArmedStarts(t *testing.T) {
	cli := tst.StartEtcd(t).Client(t)
	n := startNode(t, cli, "n1", true)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	event := liveEvents(t, n.openStream(ctx, t, readToken, "?identity=arm&type=fired,started").Body)
	var lastCursor [2]int64
	next := func() liveEvent {
		t.Helper()
		ev, id := event()
		rev, idx, _ := strings.Cut(id, ".")
		r, _ := strconv.ParseInt(rev, 10, 64)
		i, _ := strconv.ParseInt(idx, 10, 64)
		if r < lastCursor[0] || r == lastCursor[0] && i <= lastCursor[1] {
			t.Fatalf("event of cursor %s after %d.%d: not in stream order", id, lastCursor[0], lastCursor[1])
		}
		lastCursor = [2]int64{r, i}
		return ev
	}

	// Every 300ms: each run after the first is due within the look-ahead
	// when the one before it ends, so it is armed.
	every := n.schedule(t, "arm", 300*time.Millisecond, nil)
	for armed := 0; armed < 2; {
		ev := next()
		if ev.TaskID == every.GetId() && ev.Armed {
			if ev.Time != ev.Next {
				t.Fatalf("armed %s of run %d: time %s, want its fire time %s", ev.Type, ev.Run, ev.Time, ev.Next)
			}
			armed++
		}
	}
	// A manual run has no fire time: not armed.
	sched, err := n.api.ScheduleTask(as(callCtx(t), adminToken), &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{
		Identity: "arm", Kind: "work", Scope: taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{Delay: durationpb.New(time.Hour)}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	once := sched.GetTask()
	if _, err := n.api.RunTaskNow(as(callCtx(t), adminToken), &taskdv1.RunTaskNowRequest{Identity: "arm", TaskId: once.GetId()}); err != nil {
		t.Fatal(err)
	}
	for seen := 0; seen < 2; {
		ev := next()
		if ev.TaskID == once.GetId() {
			if ev.Armed {
				t.Fatalf("a manual run's %s is marked armed: %+v", ev.Type, ev)
			}
			seen++
		}
	}
}

package taskservice_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestRunVetoStopsARunBeforeItsHandler: a veto refuses the runs it names:
// their handler is not called, the library sees FIRED then VETOED (no
// STARTED), history records VETOED with the reason, the fire time is done
// (a periodic task goes on with its next one, not retried), and the event
// stream shows VETOED. A veto that panics does not veto.
func TestRunVetoStopsARunBeforeItsHandler(t *testing.T) {
	h := newHarness(t, func(c *taskservice.Config) {
		c.Vetoes = []taskservice.RunVeto{
			func(ctx context.Context, r *taskservice.Run) string { panic("a broken veto") },
			func(ctx context.Context, r *taskservice.Run) string {
				if r.RunNumber%2 == 1 {
					return fmt.Sprintf("odd run %d", r.RunNumber)
				}
				return ""
			},
		}
	})
	w := watch(t, h.node, &taskdv1.WatchEventsRequest{Identity: "v"})
	iv := 50 * time.Millisecond
	task := h.schedule(spec("v", "rec", every(time.Now().Add(iv), iv, 4)))
	h.waitState("v", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	calls := h.rec.of(task.Id)
	if len(calls) != 2 || calls[0].Run != 2 || calls[1].Run != 4 {
		t.Fatalf("handler called for runs %v, want 2 and 4 (odd ones vetoed)", calls)
	}
	runs := h.runs("v", task.Id) // newest first
	if len(runs) != 4 {
		t.Fatalf("%d runs in history, want 4", len(runs))
	}
	for _, r := range runs {
		want := taskdv1.Outcome_OUTCOME_SUCCESS
		if r.RunNumber%2 == 1 {
			want = taskdv1.Outcome_OUTCOME_VETOED
			if r.Message != fmt.Sprintf("odd run %d", r.RunNumber) {
				t.Fatalf("vetoed run %d message %q", r.RunNumber, r.Message)
			}
		}
		if r.Outcome != want {
			t.Fatalf("run %d outcome %v, want %v", r.RunNumber, r.Outcome, want)
		}
	}
	got := fmt.Sprint(h.ev.types(task.Id)[:4])
	want := fmt.Sprint([]taskservice.EventType{taskservice.EventFired, taskservice.EventVetoed, taskservice.EventNextScheduled, taskservice.EventFired})
	if got != want {
		t.Fatalf("library events %v, want %v…", got, want)
	}
	w.waitFor(t, "VETOED in the stream", func(evs []*taskdv1.Event) bool {
		return countType(evs, taskdv1.EventType_EVENT_TYPE_VETOED) == 2
	})
}

package builtin

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/taskd/taskd/pkg/taskservice"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testRun returns a run with every field a built-in handler hands on set.
func testRun(payload string) *taskservice.Run {
	return &taskservice.Run{
		Identity:  "user-42",
		TaskID:    "task-7",
		Kind:      "mail",
		Payload:   []byte(payload),
		RunNumber: 12,
		Attempt:   3,
		FireTime:  time.Date(2026, 3, 29, 1, 30, 0, 123456789, time.UTC),
		Fence:     taskservice.Fence{Epoch: 5, Revision: 9001},
		Node:      "node-a",
	}
}

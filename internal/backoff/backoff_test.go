package backoff_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/taskd/taskd/internal/backoff"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A wait whose context has ended returns false without sleeping out its
// delay (the delay is an hour: the test would time out otherwise).
func TestWaitEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if backoff.New(time.Hour, time.Hour).Wait(ctx) {
		t.Fatal("Wait reported true for an ended context")
	}
}

// Waits grow up to the maximum. Only the lower bound of each wait is
// checked (half of the delay, the jitter's floor): an upper bound would be a
// timed assertion.
func TestWaitDoublesUpToTheMaximum(t *testing.T) {
	const initial = 4 * time.Millisecond
	b := backoff.New(initial, 4*initial)
	for i, want := range []time.Duration{initial, 2 * initial, 4 * initial, 4 * initial} {
		start := time.Now()
		if !b.Wait(context.Background()) {
			t.Fatal("Wait reported false")
		}
		if got := time.Since(start); got < want/2 {
			t.Fatalf("wait %d took %s, want at least %s", i, got, want/2)
		}
	}
}

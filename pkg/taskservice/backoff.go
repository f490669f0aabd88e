package taskservice

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is the node's one retry delay: it doubles from initial up to max,
// with jitter, and every wait ends early when the caller's context does.
type backoff struct {
	initial, max, next time.Duration
}

func newBackoff(initial, max time.Duration) *backoff {
	return &backoff{initial: initial, max: max, next: initial}
}

// wait sleeps the current delay (between half and all of it), doubles the
// delay for the next time, and reports false if ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	d := b.next/2 + time.Duration(rand.Int64N(int64(b.next/2)+1))
	if b.next < b.max {
		b.next = min(2*b.next, b.max)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// reset starts again from the initial delay.
func (b *backoff) reset() { b.next = b.initial }

// Package backoff is the one retry delay of taskd's loops: it doubles from
// an initial delay up to a maximum, with jitter, and every wait ends early
// when the caller's context does.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is a retry delay. It is not safe for concurrent use: each loop
// keeps its own.
type Backoff struct {
	initial, max, next time.Duration
}

// New returns a Backoff whose first wait is about initial and whose waits
// grow no longer than longest (nor shorter than initial).
func New(initial, longest time.Duration) *Backoff {
	return &Backoff{initial: initial, max: max(initial, longest), next: initial}
}

// Wait sleeps the current delay (between half and all of it, so that loops
// that failed together do not retry together), doubles the delay for the
// next time up to the maximum, and reports false if ctx ended first.
func (b *Backoff) Wait(ctx context.Context) bool {
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

// Reset starts again from the initial delay.
func (b *Backoff) Reset() { b.next = b.initial }

package held

import (
	"math"
	"time"
)

// Instant is a wall-clock time in Unix nanoseconds, 0 for none: the times
// a waiting entry carries besides its due time take 8 bytes each this way,
// where a time.Time takes 24 (a node holds an entry per pending task).
type Instant int64

func InstantOf(t time.Time) Instant {
	if t.IsZero() {
		return 0
	}
	return Instant(t.UnixNano())
}

// DueOf is t as an entry's due instant: as InstantOf, with times past what
// Unix nanoseconds hold (the year 2262) kept last instead of wrapping.
func DueOf(t time.Time) Instant {
	if t.After(MaxInstant.Time()) {
		return MaxInstant
	}
	return InstantOf(t)
}

// MaxInstant is the latest instant.
const MaxInstant = Instant(math.MaxInt64)

// Time returns the instant as a time.Time; the zero Time for none.
func (i Instant) Time() time.Time {
	if i == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(i))
}

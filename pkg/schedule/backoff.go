package schedule

import (
	"time"

	"github.com/taskd/taskd/internal/specdefaults"
)

// Defaults of taskd.v1.Backoff.
const (
	DefaultBackoffInitial = specdefaults.BackoffInitial
	DefaultBackoffMax     = specdefaults.BackoffMax
)

// Backoff is the wait before retry number attempt (1 for the first retry):
// initial doubled per attempt, capped at max, with jitter taking it to a
// point in [d/2, d] chosen by rnd in [0,1). A zero initial is the default
// 1s and a zero max the default 10m (taskd.v1.Backoff).
func Backoff(attempt int, initial, max time.Duration, rnd float64) time.Duration {
	if initial <= 0 {
		initial = DefaultBackoffInitial
	}
	if max <= 0 {
		max = DefaultBackoffMax
	}
	if max < initial {
		max = initial
	}
	d := initial
	for i := 1; i < attempt && d < max; i++ {
		if d > max/2 {
			d = max // doubling would pass max (or overflow)
			break
		}
		d *= 2
	}
	if d > max {
		d = max
	}
	switch {
	case rnd < 0 || rnd != rnd: // negative or NaN
		rnd = 0
	case rnd > 1:
		rnd = 1
	}
	half := d / 2
	return half + time.Duration(rnd*float64(d-half))
}

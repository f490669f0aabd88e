package membership

import (
	"testing"
	"time"
)

// A renewal acknowledged after a later one was (replies can cross) does
// not move the clock back.
func TestAnOlderRenewalDoesNotMoveTheClockBack(t *testing.T) {
	m := New(Config{TTL: 3 * time.Second})
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	m.renewed(t0.Add(time.Second))
	m.renewed(t0)
	if sent, _ := m.Renewal(); !sent.Equal(t0.Add(time.Second)) {
		t.Fatalf("renewal sent %s after an older one was acknowledged, want %s", sent, t0.Add(time.Second))
	}
}

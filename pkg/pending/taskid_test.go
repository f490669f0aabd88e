package pending

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// base is the fixed time the clocks of these tests count from.
var base = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

// fixedClock always reads t.
func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// seqClock reads the given instants in turn, then stays at the last one.
func seqClock(ts ...time.Time) func() time.Time {
	i := 0
	return func() time.Time {
		t := ts[min(i, len(ts)-1)]
		i++
		return t
	}
}

// idMillis decodes the Unix milliseconds in the first 10 characters of id.
func idMillis(t *testing.T, id string) int64 {
	t.Helper()
	var v uint64
	for i := 0; i < 10; i++ {
		d := strings.IndexByte(crockford, id[i])
		if d < 0 {
			t.Fatalf("id %q: bad character %q", id, id[i])
		}
		v = v<<5 | uint64(d)
	}
	return int64(v) // 50 bits: 2 always zero (130-bit encoding of 128), then 48 of milliseconds
}

func checkIncreasing(t *testing.T, ids []string) {
	t.Helper()
	for i, id := range ids {
		if len(id) != TaskIDLen || !ValidTaskID(id) {
			t.Fatalf("id %d %q is not a valid task id", i, id)
		}
		if i > 0 && ids[i-1] >= id {
			t.Fatalf("ids %d and %d not increasing: %q then %q", i-1, i, ids[i-1], id)
		}
	}
}

func TestIDSourceSameMillisecond(t *testing.T) {
	s := &IDSource{now: fixedClock(base)}
	ids := make([]string, 10_000)
	for i := range ids {
		ids[i] = s.New()
	}
	checkIncreasing(t, ids)
	for _, id := range ids {
		if ms := idMillis(t, id); ms != base.UnixMilli() {
			t.Fatalf("id %q carries ms %d, want %d", id, ms, base.UnixMilli())
		}
	}
}

func TestIDSourceAdvancingClock(t *testing.T) {
	// 10,000 calls: bursts of up to 37 within one millisecond, and steps of
	// 1µs (same ms), 1ms and 1s.
	now := base
	s := &IDSource{now: func() time.Time { return now }}
	ids := make([]string, 10_000)
	for i := range ids {
		switch {
		case i%997 == 0:
			now = now.Add(time.Second)
		case i%37 == 0:
			now = now.Add(time.Millisecond)
		default:
			now = now.Add(time.Microsecond)
		}
		ids[i] = s.New()
		if ms := idMillis(t, ids[i]); ms != now.UnixMilli() {
			t.Fatalf("id %d carries ms %d, clock reads %d", i, ms, now.UnixMilli())
		}
	}
	checkIncreasing(t, ids)
}

// TestIDSortsByCreation: ids made in different milliseconds sort by time,
// even from different sources (different random counters).
func TestIDSortsByCreation(t *testing.T) {
	var ids []string
	for i := 0; i < 2000; i++ {
		s := &IDSource{now: fixedClock(base.Add(time.Duration(i) * time.Millisecond))}
		ids = append(ids, s.New())
	}
	checkIncreasing(t, ids)
	shuffled := slices.Clone(ids)
	slices.Reverse(shuffled)
	slices.Sort(shuffled)
	if !slices.Equal(shuffled, ids) {
		t.Fatal("sorting ids does not give creation order")
	}
	// Extremes of the time range.
	early := (&IDSource{now: fixedClock(time.UnixMilli(1))}).New()
	late := (&IDSource{now: fixedClock(time.UnixMilli(1<<48 - 1))}).New()
	if !(early < ids[0] && ids[len(ids)-1] < late) || !ValidTaskID(early) || !ValidTaskID(late) {
		t.Fatalf("extremes out of order: %q %q %q", early, ids[0], late)
	}
}

func TestIDSourceClockBackwards(t *testing.T) {
	s := &IDSource{now: seqClock(
		base,
		base.Add(-time.Second), // back
		base.Add(-time.Hour),   // further back
		base,                   // back to the high-water mark
		base.Add(-time.Millisecond),
		base.Add(time.Millisecond), // forward again
		base.Add(time.Millisecond-time.Microsecond),
		base.Add(2*time.Millisecond),
		time.Unix(0, 0), // far back
	)}
	var ids []string
	for i := 0; i < 9; i++ {
		ids = append(ids, s.New())
	}
	checkIncreasing(t, ids)
	wantMs := []time.Duration{0, 0, 0, 0, 0, 1, 1, 2, 2}
	for i, id := range ids {
		if got, want := idMillis(t, id), base.Add(wantMs[i]*time.Millisecond).UnixMilli(); got != want {
			t.Fatalf("id %d carries ms %d, want %d (never behind the last id)", i, got, want)
		}
	}
}

// TestIDSourceCounterCarry: the 64-bit low counter wraps into the high
// counter and the id still grows.
func TestIDSourceCounterCarry(t *testing.T) {
	s := &IDSource{now: fixedClock(base)}
	first := s.New()
	s.hi, s.lo = 5, math.MaxUint64-1
	a := s.New() // lo = MaxUint64
	b := s.New() // lo wraps to 0, hi = 6
	c := s.New()
	if s.hi != 6 || s.lo != 1 {
		t.Fatalf("counter after carry: hi %d lo %d", s.hi, s.lo)
	}
	checkIncreasing(t, []string{a, b, c})
	if idMillis(t, first) != idMillis(t, c) {
		t.Fatal("carry changed the millisecond")
	}
}

func TestIDSourceZeroValue(t *testing.T) {
	var s IDSource // reads the wall clock
	a, b := s.New(), s.New()
	checkIncreasing(t, []string{a, b})
	if a2 := NewIDSource().New(); !ValidTaskID(a2) {
		t.Fatalf("NewIDSource id %q invalid", a2)
	}
}

func TestIDSourceConcurrent(t *testing.T) {
	s := &IDSource{now: fixedClock(base)}
	const workers, each = 8, 1000
	out := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				out[w] = append(out[w], s.New())
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, ids := range out {
		checkIncreasing(t, ids) // each caller sees increasing ids
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("duplicate id %q", id)
			}
			seen[id] = true
		}
	}
}

func TestEncode128(t *testing.T) {
	tests := []struct {
		name string
		raw  [16]byte
		want string
	}{
		{"zero", [16]byte{}, "00000000000000000000000000"},
		{"one", [16]byte{15: 1}, "00000000000000000000000001"},
		{"31", [16]byte{15: 31}, "0000000000000000000000000z"},
		{"32", [16]byte{15: 32}, "00000000000000000000000010"},
		{"all ones", [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
			"7zzzzzzzzzzzzzzzzzzzzzzzzz"},
		{"top bit", [16]byte{0: 0x80}, "40000000000000000000000000"},
		{"bit 64 crosses the halves", [16]byte{7: 1}, "0000000000000g000000000000"},
	}
	for _, tt := range tests {
		if got := encode128(tt.raw); got != tt.want {
			t.Errorf("%s: encode128 = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestValidTaskID(t *testing.T) {
	good := (&IDSource{now: fixedClock(base)}).New()
	tests := []struct {
		name string
		s    string
		ok   bool
	}{
		{"made id", good, true},
		{"all zero", "00000000000000000000000000", true},
		{"largest", "7zzzzzzzzzzzzzzzzzzzzzzzzz", true},
		{"every letter", "0123456789abcdefghjkmnpqrs", true},
		{"tail letters", "0tvwxyz0000000000000000000", true},
		{"empty", "", false},
		{"25 chars", good[:25], false},
		{"27 chars", good + "0", false},
		{"first char 8 overflows 128 bits", "80000000000000000000000000", false},
		{"first char z", "z0000000000000000000000000", false},
		{"upper case", strings.ToUpper(good), false},
		{"one upper case", "0000000000000000000000000A", false},
		{"i", "0000000000000000000000000i", false},
		{"l", "0000000000000000000000000l", false},
		{"o", "0000000000000000000000000o", false},
		{"u", "0000000000000000000000000u", false},
		{"dash", "0000000000000-000000000000", false},
		{"slash", "0000000000000/000000000000", false},
		{"space", "0000000000000 000000000000", false},
		{"NUL", "0000000000000\x00000000000000", false},
		{"non-ASCII same byte count", "000000000000000000000000é", false},
	}
	for _, tt := range tests {
		if got := ValidTaskID(tt.s); got != tt.ok {
			t.Errorf("%s: ValidTaskID(%q) = %v, want %v", tt.name, tt.s, got, tt.ok)
		}
	}
}

func BenchmarkIDSourceNew(b *testing.B) {
	b.Run("fixed-clock", func(b *testing.B) {
		s := &IDSource{now: fixedClock(base)}
		for b.Loop() {
			_ = s.New()
		}
	})
	b.Run("advancing-clock", func(b *testing.B) {
		now := base
		s := &IDSource{now: func() time.Time { now = now.Add(time.Millisecond); return now }}
		for b.Loop() {
			_ = s.New()
		}
	})
}

package etcdfault_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskd/taskd/internal/etcdfault"
)

// outcomes puts n keys under prefix, one after the other, through a client
// with random faults of seed, and returns what happened to each: "ok",
// "fail" (nothing written) or "ambiguous" (written, error returned).
func outcomes(t *testing.T, seed int64, prefix string, n int) string {
	t.Helper()
	in, cli, plain := clients(t)
	in.Random(seed, etcdfault.Probabilities{Fail: 0.25, Ambiguous: 0.25, DelayBefore: 0.1, DelayAfter: 0.1, Delay: time.Millisecond})
	var out []string
	for i := range n {
		key := fmt.Sprintf("%s/%d", prefix, i)
		_, err := cli.Put(ctxFor(t, 5*time.Second), key, "v")
		w := written(t, plain, key)
		switch {
		case err == nil && w:
			out = append(out, "ok")
		case errors.Is(err, etcdfault.ErrInjected) && !w:
			out = append(out, "fail")
		case errors.Is(err, etcdfault.ErrAmbiguous) && w:
			out = append(out, "ambiguous")
		default:
			t.Fatalf("put %d: err %v, written %v: not a consistent outcome", i, err, w)
		}
	}
	return strings.Join(out, " ")
}

func TestRandomIsDeterministicForASeed(t *testing.T) {
	a := outcomes(t, 42, "a", 40)
	b := outcomes(t, 42, "b", 40)
	if a != b {
		t.Fatalf("seed 42 gave\n%s\nthen\n%s", a, b)
	}
	for _, o := range []string{"ok", "fail", "ambiguous"} {
		if !strings.Contains(a, o) {
			t.Fatalf("40 calls with seed 42 never had outcome %q: %s", o, a)
		}
	}
	if c := outcomes(t, 43, "c", 40); c == a {
		t.Fatalf("seeds 42 and 43 gave the same faults: %s", a)
	}
}

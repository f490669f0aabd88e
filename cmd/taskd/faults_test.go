package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseChaosFaults(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want chaosFaults
	}{
		{"seed=7,fail=0.1,ambiguous=0.05,delay=0.2:150ms", chaosFaults{seed: 7, fail: 0.1, ambiguous: 0.05, delay: 0.2, delayFor: 150 * time.Millisecond}},
		{"", chaosFaults{}},
		{" fail=1 ", chaosFaults{fail: 1}},
		{"seed=-3,delay=0", chaosFaults{seed: -3}},
		{"delay=0.5:1s,seed=2", chaosFaults{seed: 2, delay: 0.5, delayFor: time.Second}},
	} {
		got, err := parseChaosFaults(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseChaosFaults(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"seed=x", "seed=x"},
		{"fail=1.5", "not a chance"},
		{"fail=-0.1", "not a chance"},
		{"ambiguous=abc", "not a chance"},
		{"delay=0.1", "needs a duration"},
		{"delay=0.1:soon", "delay=0.1:soon"},
		{"delay=0.1:0s", "must be > 0"},
		{"fail=0.6,ambiguous=0.5", "more than 1"},
		{"fail=0.1,fail=0.2", "twice"},
		{"drop=0.1", `unknown key "drop"`},
		{"fail", "not key=value"},
	} {
		_, err := parseChaosFaults(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), chaosEnv) {
			t.Errorf("parseChaosFaults(%q) error %v, want one naming %s and containing %q", tc.in, err, chaosEnv, tc.want)
		}
	}
}

package main

import (
	"testing"
)

// testDefaultsInForce: get shows the values a node applies where a task
// leaves them unset, marked "(default)", never the bare word "default";
// set values are shown as set, and a task whose triggers differ in kind
// shows each kind's misfire policy.
func testDefaultsInForce(t *testing.T, c *cluster) {
	plain := c.scheduled(t, "--identity", "defaults", "--kind", "echo", "--scope", "identity",
		"--cron", "0 0 3 * * ?", "--on-startup")
	set := c.scheduled(t, "--identity", "defaults", "--kind", "echo", "--scope", "identity", "--delay", "1h",
		"--max-attempts", "3", "--backoff", "2s", "--timeout-task", "30s", "--misfire", "fire-all")
	for _, tc := range []struct {
		id   string
		want map[string]string
	}{
		{plain, map[string]string{
			"Max attempts": "25 (default)",
			"Timeout":      "5m (default)",
			"Backoff":      "1s,10m (default)",
			"Misfire":      "SKIP (default for cron), FIRE_ONCE_NOW (default for on-startup)",
		}},
		{set, map[string]string{
			"Max attempts": "3",
			"Timeout":      "30s",
			"Backoff":      "2s,10m (max default)",
			"Misfire":      "FIRE_ALL",
		}},
	} {
		d := detail(c.ok(t, "get", "--identity", "defaults", tc.id))
		for field, want := range tc.want {
			if got := d[field]; len(got) != 1 || got[0] != want {
				t.Errorf("task %s: %s: %q, want %q", tc.id, field, got, want)
			}
		}
	}
}

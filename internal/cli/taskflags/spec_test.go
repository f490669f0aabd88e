package taskflags

import (
	"testing"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func TestParseMisfire(t *testing.T) {
	for in, want := range map[string]taskdv1.MisfirePolicy{
		"":                             taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED,
		"default":                      taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED,
		"once-now":                     taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
		"Once_Now":                     taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
		"fire-once-now":                taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
		"MISFIRE_POLICY_FIRE_ONCE_NOW": taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
		"skip":                         taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP,
		"SKIP":                         taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP,
		"fire-all":                     taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL,
		"MISFIRE_POLICY_FIRE_ALL":      taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL,
	} {
		if got, err := parseMisfire(in); err != nil || got != want {
			t.Errorf("parseMisfire(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"now", "all", "fire", "1"} {
		if got, err := parseMisfire(in); err == nil {
			t.Errorf("parseMisfire(%q) = %v, want an error", in, got)
		}
	}
}

package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"release", debug.BuildInfo{GoVersion: "go1.26.7", Main: debug.Module{Version: "v1.2.3"}},
			"taskd v1.2.3, built with go1.26.7"},
		{"no version", debug.BuildInfo{GoVersion: "go1.26.7"},
			"taskd (devel), built with go1.26.7"},
		{"vcs", debug.BuildInfo{GoVersion: "go1.26.7", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-30T20:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			"taskd (devel), revision abc123, committed 2026-11-30T20:00:00Z, built with go1.26.7"},
		{"dirty", debug.BuildInfo{GoVersion: "go1.26.7", Main: debug.Module{Version: "v0.1.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}},
			"taskd v0.1.0, revision abc123-modified, built with go1.26.7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := format("taskd", &c.info); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// The test binary has build information: String names the program and
// the Go version that built it.
func TestStringOfThisBinary(t *testing.T) {
	got := String("taskctl")
	if !strings.HasPrefix(got, "taskctl ") || !strings.HasSuffix(got, "built with "+runtime.Version()) {
		t.Fatalf("String = %q", got)
	}
}

// Package buildinfo describes the running binary from the build information
// the Go toolchain embeds, for the --version of taskd and taskctl.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// String is one line naming program and what it was built from: the main
// module's version, the VCS revision and commit time (and "modified" for a
// dirty tree) when the build recorded them, and the Go version. Fields the
// build did not record are left out; it never fails.
func String(program string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return program + " (no build information)"
	}
	return format(program, info)
}

// format is String for given build information.
func format(program string, info *debug.BuildInfo) string {
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	parts := []string{program + " " + version}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		if settings["vcs.modified"] == "true" {
			rev += "-modified"
		}
		parts = append(parts, "revision "+rev)
	}
	if t := settings["vcs.time"]; t != "" {
		parts = append(parts, "committed "+t)
	}
	parts = append(parts, fmt.Sprintf("built with %s", info.GoVersion))
	return strings.Join(parts, ", ")
}

package integration

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// skipUnlessRequired skips a test whose outside tool (a browser, Python's
// gRPC) this machine lacks, with a message naming what to install. Where
// TASKDTEST_REQUIRE lists the tool (CI sets "chromium,python"; the name
// is outside TASKD_*, which taskd reads as its own options), it fails
// instead: a skipped test must never pass for a run that promised it.
func skipUnlessRequired(t *testing.T, tool, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if slices.Contains(strings.Split(os.Getenv("TASKDTEST_REQUIRE"), ","), tool) {
		t.Fatalf("TASKDTEST_REQUIRE lists %s, but: %s", tool, msg)
	}
	t.Skip(msg)
}

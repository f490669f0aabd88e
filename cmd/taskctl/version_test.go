package main

import (
	"bytes"
	"strings"
	"testing"
)

// --version prints the build information and exits 0 without a command or
// a connection; help lists it.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"--addr", "127.0.0.1:1", "--version", "list"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		if got := out.String(); !strings.HasPrefix(got, "taskctl ") || !strings.Contains(got, "built with go") {
			t.Fatalf("%v printed %q", args, got)
		}
	}
	var out, errOut bytes.Buffer
	run([]string{"help"}, &out, &errOut)
	if !strings.Contains(out.String(), "-version") {
		t.Fatalf("help does not list -version:\n%s", out.String())
	}
}

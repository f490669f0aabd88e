package taskspec

import (
	"strings"
	"testing"
)

// TestCleanMessage: a message over MaxMessage is cut on a character
// boundary and ends with the marker, within MaxMessage.
func TestCleanMessage(t *testing.T) {
	for _, s := range []string{strings.Repeat("a", MaxMessage), strings.Repeat("a", MaxMessage+1), strings.Repeat("é", MaxMessage), "bad \xff"} {
		got := CleanMessage(s)
		if len(got) > MaxMessage || !strings.HasPrefix(s, strings.TrimSuffix(got[:min(len(got), 10)], "\uFFFD")) && s != "bad \xff" {
			t.Fatalf("CleanMessage of %d bytes: %d bytes %.40q", len(s), len(got), got)
		}
		if cut := len(s) > MaxMessage; cut != strings.Contains(got, "[cut: the message was") {
			t.Fatalf("CleanMessage of %d bytes: marker %v, want %v", len(s), !cut, cut)
		}
	}
}

package tokens_test

import (
	"strings"
	"testing"

	"github.com/taskd/taskd/pkg/tokens"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

func TestParseFile(t *testing.T) {
	h := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		line, err string
	}{
		{"a " + h + " read", ""},
		{"# comment\n\n a " + h + " read,admin alice,tenant-7/*", ""},
		{"a " + h, "want ID"},
		{"a " + h + " fly", "unknown verb"},
		{"a abc read", "64 hex"},
		{"a.b " + h + " read", "letters, digits"},
		{"a " + h + " read a*b", "bad identity scope"},
		{"a " + h + " read a,,b", "bad identity scope"},
		{"a " + h + " read\na " + h + " admin", "twice"},
		{"ok " + h + " read\na " + h + " read x y", "line 2"},
	} {
		_, err := tokens.ParseFile(tc.line)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: error %v, want %q", tc.line, err, tc.err)
		}
	}
}

// TestFileLineRoundTrip: the line FileLine writes parses back into a token
// that accepts the secret, with its verbs and scopes.
func TestFileLineRoundTrip(t *testing.T) {
	secret := tokens.NewSecret()
	line := tokens.FileLine("ops", secret, []string{"read", "control"}, []string{"alice", "tenant-7/*"})
	if strings.Contains(line, secret) {
		t.Fatalf("the line %q holds the secret", line)
	}
	toks, err := tokens.ParseFile(line)
	if err != nil {
		t.Fatal(err)
	}
	tok := toks["ops"]
	if tok == nil || tok.Hash != tokens.HashSecret(secret) || tok.Source != taskdv1.TokenSource_TOKEN_SOURCE_FILE {
		t.Fatalf("parsed %+v", tok)
	}
	p := tok.Proto()
	if strings.Join(p.GetVerbs(), ",") != "read,control" || strings.Join(p.GetIdentities(), ",") != "alice,tenant-7/*" {
		t.Fatalf("proto %v", p)
	}
	for id, want := range map[string]bool{"alice": true, "alice2": false, "tenant-7/x": true, "tenant-7": false, "bob": false} {
		if got := tok.Allows(id); got != want {
			t.Errorf("Allows(%q) = %v, want %v", id, got, want)
		}
	}
}

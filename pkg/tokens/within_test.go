package tokens_test

import (
	"strings"
	"testing"

	"github.com/taskd/taskd/pkg/tokens"
)

// TestWithin: the one rule of the TokenService. A token is within a caller
// when its verbs are the caller's and each of its scopes is covered by one
// of the caller's: an exact identity by itself or a prefix it starts with,
// a prefix by a prefix it starts with; an unscoped token only by an
// unscoped caller.
func TestWithin(t *testing.T) {
	caller := func(verbs string, scopes ...string) *tokens.Token {
		m := map[string]bool{}
		for _, v := range strings.Split(verbs, ",") {
			m[v] = true
		}
		return &tokens.Token{ID: "c", Verbs: m, Scopes: scopes}
	}
	all := "schedule,read,control,admin,work"
	for _, tc := range []struct {
		name   string
		caller *tokens.Token
		verbs  string
		scopes []string
		err    string // in the error; "" for within
	}{
		{"unscoped caller, every verb: anything", caller(all), all, nil, ""},
		{"unscoped caller: a scoped token", caller(all), "read", []string{"x", "p*"}, ""},
		{"verb not held", caller("admin,read"), "read,control", nil, `verb "control"`},
		{"work not implied by admin", caller("schedule,read,control,admin"), "work", nil, `verb "work"`},
		{"scoped caller: unscoped token", caller("admin,read", "tenant-9/*"), "read", nil, "unscoped"},
		{"the escalation of the issue", caller("admin", "tenant-9/*"), all, nil, `verb "schedule"`},
		{"scoped caller, unscoped, own verbs", caller("admin,read", "tenant-9/*"), "read,admin", nil, "unscoped"},
		{"exact under a prefix", caller("read", "tenant-9/*"), "read", []string{"tenant-9/a"}, ""},
		{"narrower prefix", caller("read", "tenant-9/*"), "read", []string{"tenant-9/team-1/*"}, ""},
		{"same prefix", caller("read", "tenant-9/*"), "read", []string{"tenant-9/*"}, ""},
		{"wider prefix", caller("read", "tenant-9/*"), "read", []string{"tenant-*"}, `"tenant-*"`},
		{"the prefix's own stem", caller("read", "tenant-9/*"), "read", []string{"tenant-9"}, `"tenant-9"`},
		{"other prefix", caller("read", "tenant-9/*"), "read", []string{"tenant-10/*"}, `"tenant-10/*"`},
		{"exact by exact", caller("read", "alice"), "read", []string{"alice"}, ""},
		{"other exact", caller("read", "alice"), "read", []string{"alicia"}, `"alicia"`},
		{"prefix under an exact", caller("read", "alice"), "read", []string{"alice*"}, `"alice*"`},
		{"one scope out of several", caller("read", "alice", "t/*"), "read", []string{"alice", "t/x", "bob"}, `"bob"`},
		{"the empty prefix is not unscoped", caller("read", "*"), "read", nil, "unscoped"},
		{"the empty prefix covers any scope", caller("read", "*"), "read", []string{"a", "b/*"}, ""},
		{"a scope named like a prefix of the caller's", caller("read", "ten*"), "read", []string{"tenant-9/*", "ten"}, ""},
	} {
		var verbs []string
		if tc.verbs != "" {
			verbs = strings.Split(tc.verbs, ",")
		}
		err := tokens.Within(verbs, tc.scopes, tc.caller)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v, want within", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.err)
		}
	}
}

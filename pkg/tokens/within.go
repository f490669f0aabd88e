package tokens

import (
	"fmt"
	"strings"
)

// Within reports, as nil, that a token of verbs and scopes grants nothing
// the token caller does not: every verb is one of the caller's, and every
// identity the scopes cover is covered by the caller's. An unscoped token
// (no scopes: every identity, and calls across identities) is within an
// unscoped caller only. Otherwise the error names the first verb or scope
// that is not within.
//
// This is the one rule of the TokenService: a caller creates, lists and
// revokes only tokens within itself.
func Within(verbs []string, scopes []string, caller *Token) error {
	for _, v := range verbs {
		if !caller.Verbs[v] {
			return fmt.Errorf("verb %q is not held by token %s", v, caller.ID)
		}
	}
	if len(caller.Scopes) == 0 {
		return nil
	}
	if len(scopes) == 0 {
		return fmt.Errorf("token %s is scoped to identities %s: an unscoped token (every identity) is not within it",
			caller.ID, strings.Join(caller.Scopes, ","))
	}
	for _, s := range scopes {
		if !caller.coversScope(s) {
			return fmt.Errorf("identity scope %q is not within the scopes %s of token %s", s, strings.Join(caller.Scopes, ","), caller.ID)
		}
	}
	return nil
}

// coversScope reports whether one of t's scopes covers every identity
// scope s covers: an exact identity is covered by itself or by a prefix
// it starts with; a prefix q* by a prefix p* that q starts with (never by
// an exact identity, which covers one identity only).
func (t *Token) coversScope(s string) bool {
	q, isPrefix := strings.CutSuffix(s, "*")
	for _, o := range t.Scopes {
		p, outerPrefix := strings.CutSuffix(o, "*")
		switch {
		case outerPrefix && strings.HasPrefix(q, p):
			return true
		case !outerPrefix && !isPrefix && o == s:
			return true
		}
	}
	return false
}

// within reports, as nil, that token t is within caller (Within of its
// verbs and scopes).
func within(t, caller *Token) error {
	var verbs []string
	for _, v := range Verbs {
		if t.Verbs[v] {
			verbs = append(verbs, v)
		}
	}
	return Within(verbs, t.Scopes, caller)
}

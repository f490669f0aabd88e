package tokens

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// ParseFile reads a tokens file: one token per line,
// "ID SHA256-HEX VERBS [IDENTITIES]" with comma-separated verbs and
// identities; blank lines and lines starting with # are skipped. FileLine
// writes such a line.
func ParseFile(data string) (map[string]*Token, error) {
	tokens := map[string]*Token{}
	sc := bufio.NewScanner(strings.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || len(f) > 4 {
			return nil, fmt.Errorf("line %d: want ID SHA256-HEX VERBS [IDENTITIES]", n)
		}
		if err := ValidateID(f[0]); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, dup := tokens[f[0]]; dup {
			return nil, fmt.Errorf("line %d: token id %q listed twice", n, f[0])
		}
		t := &Token{ID: f[0], Source: taskdv1.TokenSource_TOKEN_SOURCE_FILE}
		h, err := hex.DecodeString(f[1])
		if err != nil || len(h) != sha256.Size {
			return nil, fmt.Errorf("line %d: the secret's hash is not 64 hex digits", n)
		}
		copy(t.Hash[:], h)
		verbs := strings.Split(f[2], ",")
		if err := ValidateVerbs(verbs); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		t.Verbs = verbSet(verbs)
		if len(f) == 4 {
			t.Scopes = strings.Split(f[3], ",")
			if err := ValidateScopes(t.Scopes); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		}
		tokens[t.ID] = t
	}
	return tokens, sc.Err()
}

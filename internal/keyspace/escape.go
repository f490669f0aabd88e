package keyspace

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest identity in bytes (contract §10), and so the
// longest name a key segment decodes to.
const MaxNameLen = 256

// ValidateName reports why s is not a valid identity: 1–256 bytes of UTF-8
// without control or bidirectional formatting characters (CheckText). It
// is the rule of what a key segment decodes to (Decode): an identity, or a
// kind or calendar name escaped alike (identity.Validate is this rule).
func ValidateName(s string) error {
	switch {
	case s == "":
		return errors.New("must not be empty")
	case len(s) > MaxNameLen:
		return fmt.Errorf("is %d bytes, the limit is %d", len(s), MaxNameLen)
	case !utf8.ValidString(s):
		return errors.New("is not valid UTF-8")
	}
	return CheckText(s)
}

// CheckText reports a character that has no place in a name shown to
// people (an identity, a kind, a label key): a control character (C0, DEL,
// C1), or a bidirectional formatting character (U+200E, U+200F, U+202A to
// U+202E, U+2066 to U+2069), which can make a name read as another one
// ("Trojan Source"). s must be valid UTF-8.
func CheckText(s string) error {
	for i, r := range s {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return fmt.Errorf("has a control character at byte %d", i)
		case r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return fmt.Errorf("has a bidirectional formatting character (U+%04X) at byte %d", r, i)
		}
	}
	return nil
}

// Encode escapes an identity into one etcd key segment. The result never
// contains '/', so "<prefix>/<Encode(a)>/" can never be a prefix of the keys
// of another identity: "bob" cannot match "bob/x" or "bob.x" (Darkstar's
// prefix-scan flaw). Bytes outside a small safe set become %XX.
func Encode(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !safe(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if safe(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// Decode reverses Encode. It accepts only what Encode writes, so that one
// identity has exactly one key: a safe byte is never escaped, an escape is
// upper-case hex, nothing else is left raw, and the result is a valid
// identity. Encode(Decode(k)) == k whenever Decode succeeds.
func Decode(s string) (string, error) {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if !safe(c) {
				return "", fmt.Errorf("decode identity %q: byte %#x at %d must be escaped", s, c, i)
			}
			b = append(b, c)
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("decode identity %q: truncated escape", s)
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("decode identity %q: bad escape at %d", s, i)
		}
		if c := hi<<4 | lo; safe(c) {
			return "", fmt.Errorf("decode identity %q: %q at %d must not be escaped", s, c, i)
		} else {
			b = append(b, c)
		}
		i += 2
	}
	id := string(b)
	if err := ValidateName(id); err != nil {
		return "", fmt.Errorf("decode identity %q: %w", s, err)
	}
	return id, nil
}

func safe(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '.', '~', ':', '@', '+', '=', ',':
		return true
	}
	return false
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

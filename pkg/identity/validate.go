package identity

import "github.com/taskd/taskd/internal/keyspace"

// MaxLen is the longest identity in bytes (contract §10).
const MaxLen = keyspace.MaxNameLen

// Validate reports why s is not a valid identity: 1–256 bytes of UTF-8
// without control or bidirectional formatting characters (CheckText). The
// rule lives with the key escaping (keyspace.ValidateName), since a key
// segment decodes only to a valid identity.
func Validate(s string) error { return keyspace.ValidateName(s) }

// CheckText reports a character that has no place in a name shown to
// people (an identity, a kind, a label key): a control character (C0, DEL,
// C1), or a bidirectional formatting character (U+200E, U+200F, U+202A to
// U+202E, U+2066 to U+2069), which can make a name read as another one
// ("Trojan Source"). s must be valid UTF-8.
func CheckText(s string) error { return keyspace.CheckText(s) }

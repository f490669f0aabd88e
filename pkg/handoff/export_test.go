package handoff

// DecodeEntry is decodeEntry, for the external fuzz test (which builds
// entries with internal/writepath, which imports this package).
var DecodeEntry = decodeEntry

// Package keyspace has one job: every key of taskd's etcd layout, and its
// encoding. Keys builds each key (and prefix) under a cluster prefix, and
// parses the keys that are read back (the Split methods); Encode and Decode
// escape an identity (or a kind, a calendar name, an idempotency key) into
// one key segment. The layout is the Keyspace table of
// docs/architecture.md: each method's comment names its row.
//
// It builds no etcd operation and no compare (internal/writepath does),
// reads nothing, and holds no lock: a Keys is a value, safe to copy and to
// share.
package keyspace

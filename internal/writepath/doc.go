// Package writepath is the node's one way to write etcd. Every Txn the node
// sends is a Txn value built here by the builder of its shape (schedule,
// start, confirm, commit, forward, purge, move, adopt, and the followers'
// rewrites), from the compares that fence it (the identity's epoch, the
// task's revision, the node's registration, the pauses, every-node
// progress), and sent by a Writer (alone) or a Batcher (many independent
// Txns in one request, each succeeding or failing on its own compares).
// Each write is sized here as etcd will size it (cost.go), so that no
// request is sent that etcd must refuse, and a write too large for any
// request fails alone with ErrTooLarge. The operations the shapes are made
// of (a task's put, its history entries and deletes, its calendar
// references, a handoff entry: ops.go) are built here too, over the keys
// of internal/keyspace.
//
// No other package of taskd calls Txn on the etcd client: a write's size,
// its compares and its cost are seen together here.
//
// Lock: a Batcher's mutex guards its queue only; builders and Writer hold
// no state.
package writepath

// Package membership keeps one node a member of the cluster: its one job is
// the node's registration (its record under the node's own lease) and that
// lease. A Member grants the lease and registers (replacing the record of an
// earlier incarnation of the same name at once, unless that incarnation is
// still live: liveness.go), renews the lease on its loop (Run), rewrites the
// record when the node's state changes (Publish), and, when etcd no longer
// knows the lease, has the node forget what it held and registers again
// (rejoin). What is the node's (its record's content, its identities, its
// runs) comes in through the Node interface; the writes are built by
// internal/writepath.
//
// Guarantee (contract §2.4, self-fencing): no run starts once the node
// cannot prove its lease is live. The proof is Fresh: the last acknowledged
// renewal was sent less than two thirds of the TTL ago (Margin). The moment
// of sending is taken before the call, and etcd extends a lease from the
// moment it handles the renewal, which is later, so the lease cannot have
// expired while Fresh holds; the last third is left for clock rate
// differences and for the start itself. Every write that maps an identity
// to the node, or starts a run under its registration, compares the
// registration's lease (RegisteredCmp, or the lease read with Registration):
// a start planned under a lease that has since been lost fails in etcd.
//
// Lock: a Member's mutex guards the lease, the registration's revision and
// the time the last acknowledged renewal was sent, nothing else. It is a
// leaf: the node may call the Member's methods while holding its own lock
// (the engine lock, internal/dispatch), and the Member never calls the node (Node, its callbacks) while
// holding its mutex, so never takes the engine lock under it. Publish holds a second
// mutex (one rewrite of the record at a time) while it asks the node for
// its record: Publish is never called with the engine lock held.
package membership

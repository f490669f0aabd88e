// Package placement is the placement leader (contract §3.1): the one node
// of the cluster, at a time, that holds the leader key and, while it holds
// it, moves the identities of dead nodes to the RUNNING ones (spread by
// load), drops the handoff areas of dead nodes that own nothing any more,
// purges the cancelled EVERY_NODE tasks whose retention is over, and asks
// the RUNNING nodes for rebalancing moves (rebalance.go). A Leader
// campaigns on its loop (Run) with the node's lease, and leads until the
// holding ends, then campaigns again.
//
// Beside it, what the leader shares with the node it runs on: the
// registered nodes read as candidates with their loads, the Txns that move
// identities (Cluster: a planned move and a drain use them too), and the
// encoding of a rebalancing request (request.go: the leader writes it, the
// source node reads and serves it).
//
// Guarantee: every write of the leader carries the leadership's fence (the
// leader key's create revision, identity.Leadership.Fence), so a leader
// that lost the key writes nothing; a dead node's identities move only
// while it is still unregistered (it may come back and adopt them itself),
// and each move compares the identity's epoch and the target's
// registration (writepath.Shapes.Moves).
//
// Lock: none. A Leader's state is its loop's own; a Cluster is a value,
// safe to share. What the leader needs of its node comes in through Node,
// called without any lock of the leader's.
package placement

// Package identity owns the identity-to-node mapping: the validation of
// identities (the rule lives with the key escaping, internal/keyspace), the
// mapping record whose mod revision is the identity's epoch, the Txn
// compares that fence a commit on that epoch, and the placement leader's
// election.
//
// Guarantee: at any revision an identity is mapped to at most one node, and
// every write that changes the owner changes the epoch, so a commit guarded
// by Fence(identity, epoch) cannot succeed after a move.
package identity

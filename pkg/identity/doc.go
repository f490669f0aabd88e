// Package identity owns the identity-to-node mapping: the escaping of
// identities into etcd keys, the mapping record whose mod revision is the
// identity's epoch, and the Txn compares that fence a commit on that epoch.
//
// Guarantee: at any revision an identity is mapped to at most one node, and
// every write that changes the owner changes the epoch, so a commit guarded
// by Fence(identity, epoch) cannot succeed after a move.
package identity

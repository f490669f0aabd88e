package writepath

import (
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
)

// Shapes builds every Txn of one node: one method per shape, each saying
// what it compares, writes and reads when it fails. It holds only the keys
// and the node's name, and is safe to copy and share.
type Shapes struct {
	keys   pending.Keys
	ids    identity.Keys
	node   string
	reg    string // the node's registration key
	prefix string
}

// NewShapes returns the builders of the Txns of node under prefix.
func NewShapes(prefix, node string) Shapes {
	return Shapes{keys: pending.NewKeys(prefix), ids: identity.NewKeys(prefix), node: node, reg: prefix + "nodes/" + node, prefix: prefix}
}

// Registration is the key of the node's registration.
func (s Shapes) Registration() string { return s.reg }

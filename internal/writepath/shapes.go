package writepath

import (
	"github.com/taskd/taskd/internal/keyspace"
)

// Shapes builds every Txn of one node: one method per shape, each saying
// what it compares, writes and reads when it fails. It holds only the keys
// and the node's name, and is safe to copy and share.
type Shapes struct {
	keys keyspace.Keys
	node string
	reg  string // the node's registration key
}

// NewShapes returns the builders of the Txns of node under prefix.
func NewShapes(prefix, node string) Shapes {
	keys := keyspace.New(prefix)
	return Shapes{keys: keys, node: node, reg: keys.Node(node)}
}

// Registration is the key of the node's registration.
func (s Shapes) Registration() string { return s.reg }

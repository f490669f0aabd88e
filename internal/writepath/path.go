package writepath

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Path is one node's write path as a value: the shapes of its Txns, the
// Writer of its lone Txns, and its two Batchers.
type Path struct {
	Shapes Shapes
	Writer Writer
	// Batch sends the node's fenced writes (starts, commits, settlings):
	// two requests in flight, one filling while the other commits
	// (measured best on 2 cores; more only shrinks the batches).
	Batch *Batcher
	// Checks sends the checks of armed runs at their fire time: they
	// write nothing and a run waits for its check, so more of them are in
	// flight, in batches of their own.
	Checks *Batcher
}

// PathConfig is what a node's write path is built from.
type PathConfig struct {
	Client          *clientv3.Client
	Prefix, Node    string
	EtcdTimeout     time.Duration
	MaxTxnOps       int
	MaxRequestBytes int
	// Observe, if set, is told the size of each batched request of Batch.
	Observe func(items int)
}

// NewPath returns the write path of a node.
func NewPath(c PathConfig) Path {
	p := Path{
		Shapes: NewShapes(c.Prefix, c.Node),
		Writer: NewWriter(c.Client),
		Batch:  NewBatcher(c.Client, c.EtcdTimeout, c.MaxTxnOps, c.MaxRequestBytes, 2),
		Checks: NewBatcher(c.Client, c.EtcdTimeout, c.MaxTxnOps, c.MaxRequestBytes, 8),
	}
	if c.Observe != nil {
		p.Batch.Observe(c.Observe)
	}
	return p
}

// Wait waits until every batched request sent so far has been answered.
func (p Path) Wait() {
	p.Batch.Wait()
	p.Checks.Wait()
}

package taskservice

import (
	"context"
	"time"

	"github.com/taskd/taskd/internal/backoff"
)

// Remote runs, as one Handler, the kinds served by processes outside the
// node: remote workers (pkg/workers). Its Work is called for every run of
// a kind that has no handler in Config.Handlers, under the same fence,
// lease check, timeout and run slot as a local handler's call, and returns
// the outcome the same way. Kinds lists the kinds it serves now, which the
// node advertises in its registration; KindsChanged signals (without
// blocking, coalesced) each time that list may have changed.
type Remote interface {
	Handler
	Kinds() []string
	KindsChanged() <-chan struct{}
}

// MaxRemoteKinds is the most distinct kinds a node advertises for its
// Remote: pkg/workers refuses a worker whose kinds would take the node past
// it, and Kinds keeps only the first MaxRemoteKinds (sorted) of a Remote
// that reports more. The node's registration (its kinds with the rest of
// its record, one etcd Put under its lease) then stays below about 132 KiB
// plus its own handlers' kinds: each kind costs at most MaxKindLen + 3
// bytes, and etcd refuses a request over 1.5 MiB (--max-request-bytes),
// which would leave a node that lost its lease unable to register again.
const MaxRemoteKinds = 1024

// remoteKindsLoop republishes the node's registration whenever the remote
// workers' kinds change, so that scheduling anywhere in the cluster knows
// them (and refuses a kind that nothing serves).
func (n *Node) remoteKindsLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.cfg.Remote.KindsChanged():
		}
		b := backoff.New(50*time.Millisecond, n.cfg.LeaseTTL/4)
		for attempt := 1; ; attempt++ {
			err := n.publish(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			if attempt == 5 || !b.Wait(ctx) {
				// A registration rewritten later (the next change, or a
				// new registration after a lost lease) carries the kinds.
				n.log.Warn("could not advertise the remote workers' kinds", "kinds", len(n.Kinds()), "error", err)
				break
			}
		}
		n.kindsMu.Lock()
		n.kinds = nil // this node's own view of the cluster's kinds too
		n.kindsMu.Unlock()
	}
}

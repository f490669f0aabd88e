//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// nodesPrefix is where taskd (default --prefix) registers its nodes.
const nodesPrefix = "/taskd/nodes/"

// registrationEnd is the revision at which one registration of a node
// ended: its record was deleted (lease expired or revoked) or replaced
// under another lease (a new incarnation registered).
type registrationEnd struct {
	node string
	rev  int64
	how  string
}

// registrationWatch follows the nodes' registrations from the start of the
// run and records every registration's end.
type registrationWatch struct {
	mu     sync.Mutex
	ends   []registrationEnd
	broken string // why the watch stopped early ("" while complete)
}

// watchRegistrations watches the nodes' records from revision rev on
// until ctx ends; the returned function waits for the watch to stop.
func watchRegistrations(ctx context.Context, cli *clientv3.Client, rev int64) (*registrationWatch, func()) {
	rw := &registrationWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		leases := map[string]int64{}
		// The client re-establishes a broken watch on another member from
		// the last revision it delivered; a compaction past it ends it.
		wch := cli.Watch(clientv3.WithRequireLeader(ctx), nodesPrefix, clientv3.WithPrefix(), clientv3.WithRev(rev))
		for resp := range wch {
			if err := resp.Err(); err != nil {
				if ctx.Err() == nil {
					rw.mu.Lock()
					rw.broken = err.Error()
					rw.mu.Unlock()
				}
				return
			}
			for _, ev := range resp.Events {
				key := string(ev.Kv.Key)
				node := strings.TrimPrefix(key, nodesPrefix)
				prev, had := leases[key]
				switch {
				case ev.Type == clientv3.EventTypeDelete:
					delete(leases, key)
					if had {
						rw.add(registrationEnd{node, ev.Kv.ModRevision, "record deleted"})
					}
				case had && prev != ev.Kv.Lease:
					leases[key] = ev.Kv.Lease
					rw.add(registrationEnd{node, ev.Kv.ModRevision, fmt.Sprintf("re-registered under lease %x", ev.Kv.Lease)})
				default:
					leases[key] = ev.Kv.Lease
				}
			}
		}
		if ctx.Err() == nil {
			rw.mu.Lock()
			rw.broken = "watch channel closed"
			rw.mu.Unlock()
		}
	}()
	return rw, func() { <-done }
}

func (rw *registrationWatch) add(e registrationEnd) {
	rw.mu.Lock()
	rw.ends = append(rw.ends, e)
	rw.mu.Unlock()
}

// snapshot returns the ends seen so far and why the watch broke, if it did.
func (rw *registrationWatch) snapshot() ([]registrationEnd, string) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return append([]registrationEnd(nil), rw.ends...), rw.broken
}

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
		next := rev
		for ctx.Err() == nil {
			// The client moves a broken watch to another member by itself;
			// an error that ends the watch (a member without a leader, say)
			// is followed by a new watch from the next revision. Only a
			// compaction past it loses events.
			wch := cli.Watch(ctx, nodesPrefix, clientv3.WithPrefix(), clientv3.WithRev(next))
			for resp := range wch {
				if resp.CompactRevision != 0 {
					rw.mu.Lock()
					rw.broken = fmt.Sprintf("compacted at revision %d before revision %d was read", resp.CompactRevision, next)
					rw.mu.Unlock()
					return
				}
				if resp.Err() != nil {
					break
				}
				for _, ev := range resp.Events {
					next = ev.Kv.ModRevision + 1
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
			pause(ctx, pollEvery)
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

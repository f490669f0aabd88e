package taskservice

import (
	"context"
	"time"
)

// This file makes the node converge after a write whose outcome it does not
// know (a Txn that timed out, a caller that stopped waiting): it reads the
// identity again from etcd, so that a task that is in etcd is run (once per
// fire time: starts are fenced on the task's revision) and one that is not
// is forgotten.

// repair asks the repair loop to read identity id again.
func (n *Node) repair(id string) {
	n.mu.Lock()
	n.dirty[id] = struct{}{}
	n.mu.Unlock()
	select {
	case n.repairWake <- struct{}{}:
	default:
	}
}

// repairLoop reloads the identities asked for, with backoff while etcd
// fails.
func (n *Node) repairLoop() {
	defer n.wg.Done()
	bo := newBackoff(100*time.Millisecond, 5*time.Second)
	for {
		select {
		case <-n.repairWake:
		case <-n.life.Done():
			return
		}
		for {
			n.mu.Lock()
			ids := make([]string, 0, len(n.dirty))
			for id := range n.dirty {
				ids = append(ids, id)
			}
			clear(n.dirty)
			n.mu.Unlock()
			if len(ids) == 0 {
				break
			}
			failed := false
			for _, id := range ids {
				if err := n.reloadIdentity(n.life, id); err != nil {
					if n.life.Err() != nil {
						return
					}
					n.log.Warn("repair: read identity again; will retry", "identity", id, "error", err)
					n.mu.Lock()
					n.dirty[id] = struct{}{}
					n.mu.Unlock()
					failed = true
				}
			}
			if !failed {
				bo.reset()
				break
			}
			if !bo.wait(n.life) {
				return
			}
		}
	}
}

// reloadIdentity reads id's mapping and, if this incarnation owns it, loads
// its tasks under the current epoch; if it does not, forgets it here.
func (n *Node) reloadIdentity(ctx context.Context, id string) error {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	owner, err := n.idmap.Get(cctx, id)
	if err != nil {
		return err
	}
	if owner.Mapped && owner.Node == n.cfg.Name && owner.Incarnation == n.incarnation {
		return n.adoptIdentity(cctx, id, owner.Epoch)
	}
	n.mu.Lock()
	st := n.idents[id]
	if st != nil && !st.lost {
		n.dropIdentityLocked(st)
	}
	n.mu.Unlock()
	return nil
}

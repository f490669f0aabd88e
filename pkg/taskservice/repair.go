package taskservice

import (
	"context"
	"time"

	"github.com/taskd/taskd/internal/backoff"
)

// This file makes the node converge after a write whose outcome it does not
// know (a Txn that timed out, a caller that stopped waiting): it reads the
// identity again from etcd, so that a task that is in etcd is run (once per
// fire time: starts are fenced on the task's revision) and one that is not
// is forgotten.

// repairQueue is the identities to read again (n.mu), and the repairer's
// wake-up.
type repairQueue struct {
	reads []repairRead
	wake  chan struct{}
}

// repairRead is one identity to read again, not before at; with
// ifMissing, only if the node does not hold it by then.
type repairRead struct {
	id        string
	at        time.Time
	ifMissing bool
}

// repair asks the repair loop to read identity id again, at once.
func (n *Node) repair(id string) { n.repairAfter(id, 0) }

// repairAfter asks the repair loop to read identity id again after d (a
// write whose outcome is unknown may still be applied until its deadline).
func (n *Node) repairAfter(id string, d time.Duration) {
	n.queueRepair(repairRead{id: id, at: time.Now().Add(d)})
}

// repairIfMissing asks the repair loop to read identity id again after d if
// the node does not hold it by then: it appeared in this node's ownership
// index, which a handoff or a schedule normally follows up on its own; one
// that nothing follows up (an identity mapped to an earlier incarnation of
// this name, which would run nowhere) is adopted.
func (n *Node) repairIfMissing(id string, d time.Duration) {
	n.queueRepair(repairRead{id: id, at: time.Now().Add(d), ifMissing: true})
}

func (n *Node) queueRepair(r repairRead) {
	n.mu.Lock()
	n.repairQ.reads = append(n.repairQ.reads, r)
	n.mu.Unlock()
	select {
	case n.repairQ.wake <- struct{}{}:
	default:
	}
}

// repairLoop does the reads asked for when they are due, with backoff while
// etcd fails.
func (n *Node) repairLoop() {
	bo := backoff.New(100*time.Millisecond, 5*time.Second)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		due, next := n.dueRepairs(time.Now())
		failed := false
		for _, id := range due {
			if err := n.reloadIdentity(n.life, id); err != nil {
				if n.life.Err() != nil {
					return
				}
				n.log.Warn("repair: read identity again; will retry", "identity", id, "error", err)
				n.repair(id)
				failed = true
			}
		}
		if failed {
			if !bo.Wait(n.life) {
				return
			}
			continue
		}
		bo.Reset()
		wait := time.Hour
		if !next.IsZero() {
			wait = time.Until(next)
		}
		timer.Reset(wait)
		select {
		case <-n.repairQ.wake:
		case <-timer.C:
		case <-n.life.Done():
			return
		}
	}
}

// dueRepairs takes the identities due by now (each once) and returns when
// the next one is due (zero if none).
func (n *Node) dueRepairs(now time.Time) (due []string, next time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	seen := map[string]bool{}
	rest := n.repairQ.reads[:0]
	for _, r := range n.repairQ.reads {
		if r.at.After(now) {
			rest = append(rest, r)
			if next.IsZero() || r.at.Before(next) {
				next = r.at
			}
			continue
		}
		if r.ifMissing {
			if st := n.idents[r.id]; st != nil && !st.lost {
				continue // held: nothing to repair
			}
		}
		if !seen[r.id] {
			seen[r.id] = true
			due = append(due, r.id)
		}
	}
	clear(n.repairQ.reads[len(rest):])
	n.repairQ.reads = rest
	return due, next
}

// reloadIdentity reads id's mapping and, if this incarnation owns it, loads
// its tasks under the current epoch. An identity mapped to this node's name
// under another incarnation (one that is no longer registered: it would
// run nowhere) is adopted, re-mapped to this incarnation under a new epoch.
// An identity that is not this node's is forgotten here.
func (n *Node) reloadIdentity(ctx context.Context, id string) error {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	owner, err := n.idmap.Get(cctx, id)
	if err != nil {
		return err
	}
	if owner.Mapped && owner.Node == n.cfg.Name {
		if owner.Incarnation != n.incarnation {
			n.log.Info("adopting an identity mapped to an earlier incarnation of this node", "identity", id,
				"incarnation", owner.Incarnation)
			return n.adoptOne(ctx, id)
		}
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

package ownership

import (
	"context"
	"sync"
	"time"

	"github.com/taskd/taskd/internal/backoff"
)

// This file makes the node converge after a write whose outcome it does not
// know (a Txn that timed out, a caller that stopped waiting): it reads the
// identity again from etcd, so that a task that is in etcd is run (once per
// fire time: starts are fenced on the task's revision) and one that is not
// is forgotten.

// repairQueue is the identities to read again, and the repairer's wake-up.
// mu is a leaf: Repair is called with the engine's lock held.
type repairQueue struct {
	mu    sync.Mutex
	reads []repairRead
	wake  chan struct{}
}

// repairRead is one identity to read again, not before at; with
// ifMissing, only if the engine does not hold it by then.
type repairRead struct {
	id        string
	at        time.Time
	ifMissing bool
}

// Repair asks the repair loop to read identity id again, at once.
func (h *Holder) Repair(id string) { h.RepairAfter(id, 0) }

// RepairAfter asks the repair loop to read identity id again after d (a
// write whose outcome is unknown may still be applied until its deadline).
func (h *Holder) RepairAfter(id string, d time.Duration) {
	h.queueRepair(repairRead{id: id, at: time.Now().Add(d)})
}

// RepairIfMissing asks the repair loop to read identity id again after d
// if the engine does not hold it by then: it appeared in this node's
// ownership index, which a handoff or a schedule normally follows up on its
// own; one that nothing follows up (an identity mapped to an earlier
// incarnation of this name, which would run nowhere) is adopted.
func (h *Holder) RepairIfMissing(id string, d time.Duration) {
	h.queueRepair(repairRead{id: id, at: time.Now().Add(d), ifMissing: true})
}

func (h *Holder) queueRepair(r repairRead) {
	q := &h.repairs
	q.mu.Lock()
	q.reads = append(q.reads, r)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// RunRepairs does the reads asked for when they are due, with backoff
// while etcd fails, until ctx ends.
func (h *Holder) RunRepairs(ctx context.Context) {
	bo := backoff.New(100*time.Millisecond, 5*time.Second)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		due, next := h.dueRepairs(time.Now())
		failed := false
		for _, id := range due {
			if err := h.reload(ctx, id); err != nil {
				if ctx.Err() != nil {
					return
				}
				h.log.Warn("repair: read identity again; will retry", "identity", id, "error", err)
				h.Repair(id)
				failed = true
			}
		}
		if failed {
			if !bo.Wait(ctx) {
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
		case <-h.repairs.wake:
		case <-timer.C:
		case <-ctx.Done():
			return
		}
	}
}

// dueRepairs takes the identities due by now (each once) and returns when
// the next one is due (zero if none). Whether the engine holds an identity
// read only if missing is asked once the queue's lock is let go.
func (h *Holder) dueRepairs(now time.Time) (due []string, next time.Time) {
	q := &h.repairs
	q.mu.Lock()
	var taken []repairRead
	rest := q.reads[:0]
	for _, r := range q.reads {
		if r.at.After(now) {
			rest = append(rest, r)
			if next.IsZero() || r.at.Before(next) {
				next = r.at
			}
			continue
		}
		taken = append(taken, r)
	}
	clear(q.reads[len(rest):])
	q.reads = rest
	q.mu.Unlock()
	seen := map[string]bool{}
	for _, r := range taken {
		if r.ifMissing {
			if _, held := h.engine.Held(r.id); held {
				continue // held: nothing to repair
			}
		}
		if !seen[r.id] {
			seen[r.id] = true
			due = append(due, r.id)
		}
	}
	return due, next
}

// reload reads id's mapping and, if this incarnation owns it, loads its
// tasks under the current epoch. An identity mapped to this node's name
// under another incarnation (one that is no longer registered: it would
// run nowhere) is adopted, re-mapped to this incarnation under a new epoch.
// An identity that is not this node's is forgotten here.
func (h *Holder) reload(ctx context.Context, id string) error {
	cctx, cancel := h.etcdCtx(ctx)
	defer cancel()
	owner, err := h.cfg.Map.Get(cctx, id)
	if err != nil {
		return err
	}
	if h.mine(owner) {
		if owner.Incarnation != h.cfg.Incarnation {
			h.log.Info("adopting an identity mapped to an earlier incarnation of this node", "identity", id,
				"incarnation", owner.Incarnation)
			return h.adoptOne(ctx, id)
		}
		return h.AdoptIdentity(cctx, id, owner.Epoch)
	}
	h.engine.Forget(id)
	return nil
}

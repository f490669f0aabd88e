package dispatch

import (
	"context"
	"time"

	"github.com/taskd/taskd/internal/held"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/backoff"
	"github.com/taskd/taskd/pkg/pending"
)

// This file keeps cold tasks: a durable task that waits in the timer queue
// more than Config.ColdAfter from its due time keeps only its entry (due time,
// priority, revision), not its record, which is most of a pending task's
// memory. Its record is read again from etcd (thawed) before it is due.
//
// Guarantees:
//   - A cold task is thawed before it can start: the dispatcher hands it to
//     the thaw loop once it is due within thawAhead, and a cold entry never
//     reaches a start queue, the look-ahead or a purge.
//   - A thawed record is the one the entry stood for: it is kept only if
//     its revision is the entry's. Any other revision (or none: the task
//     was deleted) means a change the node missed, and the identity is read
//     again (repair), as for any entry found out of date.
//   - A change that needs a cold task's record (a pause lifted, a calendar
//     changed, the dispatch start) thaws it first: ReschedLocked does.
//   - A task is never lost to a failed read: the entry waits, counted as
//     pending, and the read is made again with backoff.
//   - Only entries the node can read back as they are go cold: durable
//     IDENTITY tasks without a run marker, a manual run asked, overlapping
//     runs or a retention end pending.

// thawState is the cold tasks whose records are to be read again (n.mu):
// the queue, how many entries are thawing (queued or being read), how
// many tasks were loaded cold from a glance at their encoding, never
// decoded (installColdLocked; for tests), and the thawer's wake-up.
type thawState struct {
	q       []*held.Entry
	n       int
	glanced int
	wake    chan struct{}
}

// thawBatch is how many cold records one read Txn brings back.
const thawBatch = 64

// thawAhead is how long before its due time a cold task is thawed: before
// the look-ahead arms it, and well inside ColdAfter, so that a thawed task
// does not go cold again.
func (n *Dispatcher) thawAhead() time.Duration { return n.cfg.ColdAfter/2 + n.cfg.LookAhead }

// thawLocked takes cold entry e out of the queue and hands it to the thaw
// loop. e.thawing is true exactly while e waits in the thaw queue or in
// the loop's batch. n.mu held.
func (n *Dispatcher) thawLocked(e *held.Entry) {
	n.Queue.Remove(e)
	if e.Thawing {
		return // its read is queued or on its way; it reschedules e
	}
	e.Thawing = true
	n.thawing.n++
	n.TouchLocked(e) // still pending
	n.thawing.q = append(n.thawing.q, e)
	select {
	case n.thawing.wake <- struct{}{}:
	default:
	}
}

// installColdLocked queues e cold at the due time s was glanced at, as
// ReschedLocked would have queued it and then freeze dropped its record,
// and reports true; false (nothing done) when e needs its record now: a
// run of it is in flight here, or a pause holds it (it is parked), or it
// is no longer far enough from its due time. n.mu held.
func (n *Dispatcher) installColdLocked(e *held.Entry, s *pending.Stored) bool {
	st, g := e.Ident, &s.Glance
	if !st.Scope.GoesCold() || n.InFlightLocked(e.Ref()) || time.Until(g.Due) <= n.cfg.ColdAfter {
		return false
	}
	if n.Pauses.By(st.Name, string(g.Kind)) != nil {
		return false
	}
	n.Runs.DropShadowLocked(e)
	e.Rec, e.Raw, e.Rev, e.Prio = nil, "", s.Rev, g.Priority
	e.ClearAwait()
	n.queueAtLocked(e, g.Due, false)
	n.TouchLocked(e)
	n.thawing.glanced++
	n.Kick()
	return true
}

// ThawLoop reads the records of the entries handed to it, thawBatch at a
// time in one Txn, and reschedules them.
func (n *Dispatcher) ThawLoop(ctx context.Context) {
	bo := backoff.New(50*time.Millisecond, 2*time.Second)
	for {
		n.mu.Lock()
		k := min(len(n.thawing.q), thawBatch)
		batch := append([]*held.Entry(nil), n.thawing.q[:k]...)
		clear(n.thawing.q[:k])
		n.thawing.q = n.thawing.q[k:]
		n.mu.Unlock()
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-n.thawing.wake:
			}
			continue
		}
		if err := n.thaw(ctx, batch); err != nil {
			n.mu.Lock()
			n.thawing.q = append(batch, n.thawing.q...)
			n.mu.Unlock()
			if ctx.Err() == nil {
				n.Log.Warn("could not read cold tasks' records; retrying", "tasks", len(batch), "error", err)
			}
			if !bo.Wait(ctx) {
				return
			}
			continue
		}
		bo.Reset()
	}
}

// thaw reads the records of batch and reschedules each entry still cold;
// an entry whose record is not at its revision has its identity read
// again.
func (n *Dispatcher) thaw(ctx context.Context, batch []*held.Entry) error {
	ops := make([]clientv3.Op, len(batch))
	for i, e := range batch {
		ops[i] = clientv3.OpGet(n.Keys.Task(e.Ident.Name, e.ID))
	}
	cctx, cancel := n.EtcdCtx(ctx)
	resp, err := n.Writes.Writer.Read(cctx, ops...)
	cancel()
	if err != nil {
		return err
	}
	var stale []string
	n.mu.Lock()
	for i, e := range batch {
		e.Thawing = false
		n.thawing.n--
		if e.Gone || e.Ident.Lost || e.Running || !e.Cold() {
			// Gone, or given its record by a change meanwhile (which
			// rescheduled it).
			n.TouchLocked(e)
			continue
		}
		kvs := resp.Responses[i].GetResponseRange().GetKvs()
		if len(kvs) == 0 || kvs[0].ModRevision != e.Rev {
			// Changed or deleted without this node seeing it: the repair's
			// read installs what is there.
			n.TouchLocked(e)
			stale = append(stale, e.Ident.Name)
			continue
		}
		e.Raw = held.Frozen(kvs[0].Value)
		n.ReschedLocked(e)
	}
	n.mu.Unlock()
	for _, id := range stale {
		n.Own.Repair(id)
	}
	return nil
}

// ThawingLocked counts the cold entries whose records are being read
// again (mu held).
func (n *Dispatcher) ThawingLocked() int { return n.thawing.n }

// GlancedLocked counts the entries loaded from a glance at their record,
// cold, without decoding it (mu held).
func (n *Dispatcher) GlancedLocked() int { return n.thawing.glanced }

// Package localrefs keeps the calendar references of non-durable tasks
// (contract §4.2). A non-durable task is not stored, but a calendar it
// lists must not be deleted while it is kept: like a durable task's, its
// use of each calendar is a key under the calendar's users
// (keyspace.Keys.CalendarLocalRef), which DeleteCalendar compares absent.
// The key is written under the node's lease, so that it ends with the
// node: at Stop (the lease is revoked), when the node dies (the lease
// expires) and when a new incarnation registers (it revokes the old
// lease). The task removes it when it is purged or deleted, and an
// UpdateTask moves it with the task's list. A node that registers again
// under a new lease (it lost the old one) writes the references of the
// tasks it still holds under the new one (Restore).
//
// Lock: Refs.mu orders the writes of references with their rewrite under
// a new lease, so that no reference is written under a lease being
// replaced. It is taken before the node's own lock, never under it: Put
// and Restore call back into the node while holding it.
package localrefs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/internal/outcome"
	"github.com/taskd/taskd/internal/taskspec"
	"github.com/taskd/taskd/internal/writepath"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
)

// Config is what Refs writes with.
type Config struct {
	Client      *clientv3.Client
	Keys        keyspace.Keys
	Shapes      writepath.Shapes
	Writer      writepath.Writer
	EtcdTimeout time.Duration
	MaxTxnOps   int
	// Lease is the node's lease now (0 before it registers: Restore then
	// writes the references of every task held by then).
	Lease func() clientv3.LeaseID
	// Life bounds the best-effort removals (Drop): they are not cut short
	// by the request that asked for them.
	Life   context.Context
	Logger hclog.Logger
}

// Refs writes and removes the calendar references of the node's
// non-durable tasks.
type Refs struct {
	cfg Config
	mu  sync.Mutex
}

// New returns the references of a node's non-durable tasks.
func New(cfg Config) *Refs { return &Refs{cfg: cfg} }

func (r *Refs) etcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.cfg.EtcdTimeout)
}

// Put writes the references of recs, each in a Txn that compares its
// calendars still exist, then hands each record to queue (while holding
// the lock, so that a Restore sees it). A calendar deleted since
// validation fails the request (InvalidArgumentError naming it) and
// removes the references already written; nothing is queued.
func (r *Refs) Put(ctx context.Context, recs []*storev1.TaskRecord, queue func(*storev1.TaskRecord)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	lease := r.cfg.Lease()
	var written []*storev1.TaskRecord
	for _, rec := range recs {
		names := rec.GetSpec().GetCalendars()
		if len(names) == 0 || lease == 0 {
			continue
		}
		if err := r.put(ctx, rec, names, lease); err != nil {
			for _, w := range written {
				r.Drop(w, w.GetSpec().GetCalendars())
			}
			return err
		}
		written = append(written, rec)
	}
	for _, rec := range recs {
		queue(rec)
	}
	return nil
}

// put writes rec's references to names under lease, in one Txn that
// compares each calendar exists.
func (r *Refs) put(ctx context.Context, rec *storev1.TaskRecord, names []string, lease clientv3.LeaseID) error {
	cctx, cancel := r.etcdCtx(ctx)
	defer cancel()
	resp, err := r.cfg.Writer.Commit(cctx, r.cfg.Shapes.LocalRefs(rec, names, writepath.Lease(lease)))
	if err != nil {
		return fmt.Errorf("write the calendar references of a non-durable task: %w", err)
	}
	if !resp.Succeeded {
		for j, name := range names {
			gctx, gcancel := r.etcdCtx(ctx)
			g, err := r.cfg.Client.Get(gctx, r.cfg.Keys.Calendar(name), clientv3.WithCountOnly())
			gcancel()
			if err == nil && g.Count == 0 {
				return taskspec.Invalid(fmt.Sprintf("calendars[%d]", j), "calendar %q was deleted", name)
			}
		}
		return fmt.Errorf("write the calendar references of a non-durable task: %w", outcome.ErrConflict)
	}
	return nil
}

// Drop removes rec's references to names. Best effort: one left behind
// only keeps its calendar from being deleted until the node's lease ends.
func (r *Refs) Drop(rec *storev1.TaskRecord, names []string) {
	if len(names) == 0 {
		return
	}
	ctx, cancel := r.etcdCtx(r.cfg.Life)
	defer cancel()
	if _, err := r.cfg.Writer.Commit(ctx, r.cfg.Shapes.DropLocalRefs(rec, names)); err != nil {
		r.cfg.Logger.Warn("remove a non-durable task's calendar references; they end with the node's lease", "task", rec.GetId(), "error", err)
	}
}

// Move moves a non-durable task's references: to the calendars added (each
// compared to exist) and from those removed.
func (r *Refs) Move(ctx context.Context, rec *storev1.TaskRecord, added, removed []string) error {
	if len(added) == 0 && len(removed) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if lease := r.cfg.Lease(); len(added) > 0 && lease != 0 {
		if err := r.put(ctx, rec, added, lease); err != nil {
			return err
		}
	}
	r.Drop(rec, removed)
	return nil
}

// Restore writes the references of every non-durable task held (held
// returns their records) under the node's current lease: called once the
// new lease is the node's (the old one's keys are gone, or will be).
func (r *Refs) Restore(ctx context.Context, held func() []*storev1.TaskRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	lease := writepath.Lease(r.cfg.Lease())
	var ops []clientv3.Op
	for _, rec := range held() {
		ops = append(ops, r.cfg.Shapes.LocalRefPuts(rec, rec.GetSpec().GetCalendars(), lease)...)
	}
	for _, txn := range r.cfg.Shapes.RestoreLocalRefs(ops, r.cfg.MaxTxnOps) {
		cctx, cancel := r.etcdCtx(ctx)
		_, err := r.cfg.Writer.Commit(cctx, txn)
		cancel()
		if err != nil {
			return fmt.Errorf("write the calendar references of the non-durable tasks under the new lease: %w", err)
		}
	}
	return nil
}

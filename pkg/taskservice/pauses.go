package taskservice

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/etcdwatch"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/pkg/identity"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is pausing (contract §4.6): of one task (PausedAt in its
// record), of every task of an identity, and of every task of a kind in the
// cluster (a key each under keyspace.Keys.Pauses, present while the pause is
// in force). A paused task keeps its triggers; it starts no run, manual runs
// included, until resumed, and what came due meanwhile then goes through
// its misfire policy.
//
// Every node follows the pause keys; a due entry that a pause covers is
// parked (out of the timer queue) and put back when a pause is lifted. The
// watch is not what makes a pause hold: every start Txn compares that the
// identity's and the kind's pause keys are absent, so no run starts after a
// PauseIdentity or PauseKind call returned, whatever the watch's lag. A task
// pause bumps the record's revision, which every start compares already.

// pauseSet is the identity and kind pauses in force, as this node follows
// them (guarded by n.mu).
type pauseSet struct {
	identities map[string]time.Time
	kinds      map[string]time.Time
	parked     map[*entry]struct{} // due entries a pause holds back
}

func newPauseSet() pauseSet {
	return pauseSet{identities: map[string]time.Time{}, kinds: map[string]time.Time{}, parked: map[*entry]struct{}{}}
}

// pausedByLocked says which pauses hold back rec of identity id: "task",
// "identity", "kind" (nil: none). n.mu held.
func (n *Node) pausedByLocked(rec *storev1.TaskRecord, id string) []string {
	var by []string
	if rec.GetPausedAt() != nil {
		by = append(by, "task")
	}
	if _, ok := n.pauses.identities[id]; ok {
		by = append(by, "identity")
	}
	if _, ok := n.pauses.kinds[rec.GetSpec().GetKind()]; ok {
		by = append(by, "kind")
	}
	return by
}

// parkLocked takes a paused entry out of the queue until a pause is lifted.
func (n *Node) parkLocked(e *entry) {
	n.queue.remove(e)
	n.pauses.parked[e] = struct{}{}
}

// queueAtLocked puts e in the timer queue at at, no longer parked; purge
// says at is the end of its retention, not a fire time. An entry a pause
// held back past its fire time is taken again (takeover.go): what came due
// while it was paused is caught up by its misfire policy. n.mu held.
func (n *Node) queueAtLocked(e *entry, at time.Time, purge bool) {
	_, parked := n.pauses.parked[e]
	delete(n.pauses.parked, e)
	e.purge = purge
	n.queue.set(e, at)
	if now := time.Now(); parked && !purge && !at.After(now) {
		e.extra().takenAt = instantOf(now)
	}
}

// unparkLocked puts every parked entry back: each checks again which
// pauses still hold it.
func (n *Node) unparkLocked() {
	parked := n.pauses.parked
	n.pauses.parked = map[*entry]struct{}{}
	for e := range parked {
		if !e.running {
			n.reschedLocked(e)
		}
	}
}

// learnPause records a pause (or, with since zero, its end) that this node
// saw in a response before its watch brought it.
func (n *Node) learnPause(id, kind string, since time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	m, key := n.pauses.identities, id
	if kind != "" {
		m, key = n.pauses.kinds, kind
	}
	if since.IsZero() {
		if _, ok := m[key]; ok {
			delete(m, key)
			n.unparkLocked()
		}
		return
	}
	if _, ok := m[key]; !ok {
		m[key] = since
		n.parkPausedWaitsLocked() // runs waiting for a worker are held by it too
		return
	}
	m[key] = since
}

// loadPauses reads every pause in force and returns the revision it read at.
func (n *Node) loadPauses(ctx context.Context) (int64, error) {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	resp, err := n.cli.Get(cctx, n.keys.Pauses(), clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("read pauses: %w", err)
	}
	ids, kinds := map[string]time.Time{}, map[string]time.Time{}
	for _, kv := range resp.Kvs {
		id, kind, since, err := n.decodePause(kv.Key, kv.Value)
		if err != nil {
			n.log.Error("bad pause key", "key", string(kv.Key), "error", err)
			continue
		}
		if kind != "" {
			kinds[kind] = since
		} else {
			ids[id] = since
		}
	}
	n.mu.Lock()
	n.pauses.identities, n.pauses.kinds = ids, kinds
	n.unparkLocked()
	n.mu.Unlock()
	return resp.Header.Revision, nil
}

func (n *Node) decodePause(key, value []byte) (id, kind string, since time.Time, err error) {
	id, kind, err = n.keys.SplitPause(string(key))
	if err != nil {
		return "", "", time.Time{}, err
	}
	p := &taskdv1.Pause{}
	if err := proto.Unmarshal(value, p); err != nil {
		return "", "", time.Time{}, fmt.Errorf("decode pause: %w", err)
	}
	return id, kind, p.GetSince().AsTime(), nil
}

// pauseLoop follows the pause keys after loadPauses read them at rev.
func (n *Node) pauseLoop(ctx context.Context, rev int64) {
	n.follow(ctx, "pauses", etcdwatch.Follower{
		Key:     n.keys.Pauses(),
		Options: []clientv3.OpOption{clientv3.WithPrefix()},
		FromRev: rev,
		List:    n.loadPauses,
		Events: func(_ context.Context, evs []*clientv3.Event) {
			for _, ev := range evs {
				id, kind, err := n.keys.SplitPause(string(ev.Kv.Key))
				if err != nil {
					continue
				}
				if ev.Type == clientv3.EventTypeDelete {
					n.learnPause(id, kind, time.Time{})
					continue
				}
				if _, _, since, err := n.decodePause(ev.Kv.Key, ev.Kv.Value); err == nil {
					n.learnPause(id, kind, since)
				}
			}
		},
	})
}

// learnPausesFrom records the pauses a failed start's Else read
// (Refusal.PauseIdentity, .PauseKind); it reports whether any is in force.
func (n *Node) learnPausesFrom(id, kind string, rr ...*clientv3.GetResponse) bool {
	found := false
	for i, r := range rr {
		if r == nil || len(r.Kvs) == 0 {
			continue
		}
		_, _, since, err := n.decodePause(r.Kvs[0].Key, r.Kvs[0].Value)
		if err != nil {
			continue
		}
		found = true
		if i == 0 {
			n.learnPause(id, "", since)
		} else {
			n.learnPause("", kind, since)
		}
	}
	return found
}

// PauseIdentity pauses every task of identity id, those scheduled later
// included, until ResumeIdentity. Pausing a paused identity returns the
// pause in force.
func (n *Node) PauseIdentity(ctx context.Context, id string) (*taskdv1.Pause, error) {
	if err := identity.Validate(id); err != nil {
		return nil, invalid("identity", "%s", err.Error())
	}
	p, err := n.putPause(ctx, &taskdv1.Pause{Identity: id, Since: timestamppb.Now()})
	if err == nil {
		n.learnPause(id, "", p.Since.AsTime())
		n.emit(Event{Type: EventPaused, Identity: id})
	}
	return p, err
}

// ResumeIdentity lifts PauseIdentity (resuming an identity that is not
// paused is a no-op).
func (n *Node) ResumeIdentity(ctx context.Context, id string) error {
	if err := identity.Validate(id); err != nil {
		return invalid("identity", "%s", err.Error())
	}
	if err := n.deletePause(ctx, n.keys.PauseIdentity(id)); err != nil {
		return err
	}
	n.learnPause(id, "", time.Time{})
	n.emit(Event{Type: EventResumed, Identity: id})
	return nil
}

// PauseKind pauses every task of kind in the cluster, those scheduled later
// included, until ResumeKind.
func (n *Node) PauseKind(ctx context.Context, kind string) (*taskdv1.Pause, error) {
	if err := validateKind("kind", kind); err != nil {
		return nil, err
	}
	p, err := n.putPause(ctx, &taskdv1.Pause{Kind: kind, Since: timestamppb.Now()})
	if err == nil {
		n.learnPause("", kind, p.Since.AsTime())
		n.emit(Event{Type: EventPaused, Kind: kind})
	}
	return p, err
}

// ResumeKind lifts PauseKind.
func (n *Node) ResumeKind(ctx context.Context, kind string) error {
	if err := validateKind("kind", kind); err != nil {
		return err
	}
	if err := n.deletePause(ctx, n.keys.PauseKind(kind)); err != nil {
		return err
	}
	n.learnPause("", kind, time.Time{})
	n.emit(Event{Type: EventResumed, Kind: kind})
	return nil
}

// ListPauses returns the identity pauses, then the kind pauses, each by name.
func (n *Node) ListPauses(ctx context.Context) ([]*taskdv1.Pause, error) {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	resp, err := n.cli.Get(cctx, n.keys.Pauses(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var ids, kinds []*taskdv1.Pause
	for _, kv := range resp.Kvs {
		p := &taskdv1.Pause{}
		if err := proto.Unmarshal(kv.Value, p); err != nil {
			continue
		}
		if p.Kind != "" {
			kinds = append(kinds, p)
		} else {
			ids = append(ids, p)
		}
	}
	return append(ids, kinds...), nil
}

// putPause writes p (of its kind if it names one, else of its identity)
// unless a pause is in force there, and returns the pause in force.
func (n *Node) putPause(ctx context.Context, p *taskdv1.Pause) (*taskdv1.Pause, error) {
	txn, err := n.shapes.Pause(p)
	if err != nil {
		return nil, err
	}
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	resp, err := n.writer.Commit(cctx, txn)
	if err != nil {
		return nil, fmt.Errorf("record pause: %w", ErrOutcomeUnknown)
	}
	if !resp.Succeeded {
		r := txn.Refusal(resp.Responses)
		inForce := r.PauseIdentity
		if p.Kind != "" {
			inForce = r.PauseKind
		}
		if kvs := inForce.Kvs; len(kvs) > 0 {
			old := &taskdv1.Pause{}
			if proto.Unmarshal(kvs[0].Value, old) == nil {
				return old, nil
			}
		}
	}
	return p, nil
}

func (n *Node) deletePause(ctx context.Context, key string) error {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	if _, err := n.cli.Delete(cctx, key); err != nil {
		return fmt.Errorf("lift pause: %w", ErrOutcomeUnknown)
	}
	return nil
}

// PauseTask pauses one task until ResumeTask. A run in flight finishes.
func (n *Node) PauseTask(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	return n.setTaskPause(ctx, id, taskID, true)
}

// ResumeTask lifts PauseTask.
func (n *Node) ResumeTask(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	return n.setTaskPause(ctx, id, taskID, false)
}

func (n *Node) setTaskPause(ctx context.Context, id, taskID string, pause bool) (*taskdv1.Task, error) {
	changed := false
	t, err := n.updateTask(ctx, id, taskID, func(rec *storev1.TaskRecord) error {
		if record.IsFinal(rec.State) {
			return fmt.Errorf("task %s is %s: %w", taskID, rec.State, ErrFailedPrecondition)
		}
		if (rec.PausedAt != nil) == pause {
			return errUnchanged
		}
		rec.PausedAt = nil
		if pause {
			rec.PausedAt = timestamppb.Now()
		}
		changed = true
		return nil
	})
	if err == errUnchanged {
		return n.GetTask(ctx, id, taskID)
	}
	if err == nil && changed {
		typ := EventResumed
		if pause {
			typ = EventPaused
		}
		n.emit(Event{Type: typ, Identity: id, TaskID: taskID, Kind: t.Spec.GetKind()})
	}
	return t, err
}

package taskservice

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

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
// Every node follows the pause keys (follow.Pauses, n.pauses); a due entry
// that a pause covers is parked (out of the timer queue, into n.parked) and
// put back when a pause is lifted (pauseLifted). The watch is not what
// makes a pause hold: every start Txn compares that the identity's and the
// kind's pause keys are absent, so no run starts after a PauseIdentity or
// PauseKind call returned, whatever the watch's lag. A task pause bumps the
// record's revision, which every start compares already.

// pausedByLocked says which pauses hold back rec of identity id: "task",
// "identity", "kind" (nil: none). n.mu held.
func (n *Node) pausedByLocked(rec *storev1.TaskRecord, id string) []string {
	var by []string
	if rec.GetPausedAt() != nil {
		by = append(by, "task")
	}
	return append(by, n.pauses.By(id, rec.GetSpec().GetKind())...)
}

// parkLocked takes a paused entry out of the queue until a pause is lifted.
func (n *Node) parkLocked(e *entry) {
	n.queue.remove(e)
	n.parked[e] = struct{}{}
}

// queueAtLocked puts e in the timer queue at at, no longer parked; purge
// says at is the end of its retention, not a fire time. An entry a pause
// held back past its fire time is taken again (takeover.go): what came due
// while it was paused is caught up by its misfire policy. n.mu held.
func (n *Node) queueAtLocked(e *entry, at time.Time, purge bool) {
	_, parked := n.parked[e]
	delete(n.parked, e)
	e.purge = purge
	n.queue.set(e, at)
	if now := time.Now(); parked && !purge && !at.After(now) {
		e.extra().takenAt = instantOf(now)
	}
}

// unparkLocked puts every parked entry back: each checks again which
// pauses still hold it.
func (n *Node) unparkLocked() {
	parked := n.parked
	n.parked = map[*entry]struct{}{}
	for e := range parked {
		if !e.running {
			n.reschedLocked(e)
		}
	}
}

// pauseLifted is told by n.pauses that a pause ended or the pauses were
// listed again: every parked entry checks again which pauses hold it.
func (n *Node) pauseLifted() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.unparkLocked()
}

// pauseBegan is told by n.pauses that a pause began: the runs waiting for
// a worker that it holds back are parked too.
func (n *Node) pauseBegan() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.parkPausedWaitsLocked()
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
		n.pauses.Learn(id, "", p.Since.AsTime())
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
	n.pauses.Learn(id, "", time.Time{})
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
		n.pauses.Learn("", kind, p.Since.AsTime())
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
	n.pauses.Learn("", kind, time.Time{})
	n.emit(Event{Type: EventResumed, Kind: kind})
	return nil
}

// ListPauses returns the identity pauses, then the kind pauses, each by name.
func (n *Node) ListPauses(ctx context.Context) ([]*taskdv1.Pause, error) {
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	return n.pauses.Read(cctx)
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

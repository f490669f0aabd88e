package taskapi

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/outcome"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/taskspec"
	"github.com/taskd/taskd/internal/writepath"
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
// Every node follows the pause keys (follow.Pauses, a.cfg.Pauses); a due entry
// that a pause covers is parked (out of the timer queue, into n.parked) and
// put back when a pause is lifted (pauseLifted). The watch is not what
// makes a pause hold: every start Txn compares that the identity's and the
// kind's pause keys are absent, so no run starts after a PauseIdentity or
// PauseKind call returned, whatever the watch's lag. A task pause bumps the
// record's revision, which every start compares already.

// PauseIdentity pauses every task of identity id, those scheduled later
// included, until ResumeIdentity.
func (a *Service) PauseIdentity(ctx context.Context, id string) (*taskdv1.Pause, error) {
	if err := identity.Validate(id); err != nil {
		return nil, taskspec.Invalid("identity", "%s", err.Error())
	}
	p, err := a.putPause(ctx, &taskdv1.Pause{Identity: id, Since: timestamppb.Now()})
	if err == nil {
		a.cfg.Pauses.Learn(id, "", p.Since.AsTime())
		a.cfg.Engine.Announce(Paused, id, "", "")
	}
	return p, err
}

// ResumeIdentity lifts PauseIdentity (resuming an identity that is not
// paused is a no-op).
func (a *Service) ResumeIdentity(ctx context.Context, id string) error {
	if err := identity.Validate(id); err != nil {
		return taskspec.Invalid("identity", "%s", err.Error())
	}
	if err := a.deletePause(ctx, a.cfg.Keys.PauseIdentity(id)); err != nil {
		return err
	}
	a.cfg.Pauses.Learn(id, "", time.Time{})
	a.cfg.Engine.Announce(Resumed, id, "", "")
	return nil
}

// PauseKind pauses every task of kind in the cluster, those scheduled later
// included, until ResumeKind.
func (a *Service) PauseKind(ctx context.Context, kind string) (*taskdv1.Pause, error) {
	if err := taskspec.CheckKind("kind", kind); err != nil {
		return nil, err
	}
	p, err := a.putPause(ctx, &taskdv1.Pause{Kind: kind, Since: timestamppb.Now()})
	if err == nil {
		a.cfg.Pauses.Learn("", kind, p.Since.AsTime())
		a.cfg.Engine.Announce(Paused, "", "", kind)
	}
	return p, err
}

// ResumeKind lifts PauseKind.
func (a *Service) ResumeKind(ctx context.Context, kind string) error {
	if err := taskspec.CheckKind("kind", kind); err != nil {
		return err
	}
	if err := a.deletePause(ctx, a.cfg.Keys.PauseKind(kind)); err != nil {
		return err
	}
	a.cfg.Pauses.Learn("", kind, time.Time{})
	a.cfg.Engine.Announce(Resumed, "", "", kind)
	return nil
}

// ListPauses returns the identity pauses, then the kind pauses, each by
// name.
func (a *Service) ListPauses(ctx context.Context) ([]*taskdv1.Pause, error) {
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	return a.cfg.Pauses.Read(cctx)
}

// putPause writes p (of its kind if it names one, else of its identity)
// unless a pause is in force there, and returns the pause in force.
func (a *Service) putPause(ctx context.Context, p *taskdv1.Pause) (*taskdv1.Pause, error) {
	txn, err := a.cfg.Shapes.Pause(p)
	if err != nil {
		return nil, err
	}
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	resp, err := a.cfg.Writer.Commit(cctx, txn)
	if err != nil {
		return nil, fmt.Errorf("record pause: %w", writepath.ErrOutcomeUnknown)
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

func (a *Service) deletePause(ctx context.Context, key string) error {
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	if _, err := a.cfg.Client.Delete(cctx, key); err != nil {
		return fmt.Errorf("lift pause: %w", writepath.ErrOutcomeUnknown)
	}
	return nil
}

// PauseTask pauses one task until ResumeTask.
func (a *Service) PauseTask(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	return a.setTaskPause(ctx, id, taskID, true)
}

// ResumeTask lifts PauseTask.
func (a *Service) ResumeTask(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	return a.setTaskPause(ctx, id, taskID, false)
}

func (a *Service) setTaskPause(ctx context.Context, id, taskID string, pause bool) (*taskdv1.Task, error) {
	changed := false
	t, err := a.updateTask(ctx, id, taskID, func(rec *storev1.TaskRecord) error {
		if record.IsFinal(rec.State) {
			return fmt.Errorf("task %s is %s: %w", taskID, rec.State, outcome.ErrFailedPrecondition)
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
		return a.GetTask(ctx, id, taskID)
	}
	if err == nil && changed {
		c := Resumed
		if pause {
			c = Paused
		}
		a.cfg.Engine.Announce(c, id, taskID, t.Spec.GetKind())
	}
	return t, err
}

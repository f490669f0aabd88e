package taskapi

// Reads of tasks, runs, identities and nodes, and the API view of a
// stored task.

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/outcome"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/taskspec"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// GetTask returns one task.
func (a *Service) GetTask(ctx context.Context, id, taskID string) (*taskdv1.Task, error) {
	if rec, ok := a.cfg.Engine.LocalTask(id, taskID); ok {
		return a.view(rec, 0), nil
	}
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	f, ok, err := a.cfg.Store.Find(cctx, id, taskID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("task %s of identity %q: %w", taskID, id, outcome.ErrNotFound)
	}
	t := a.view(f.Rec, f.Rev)
	t.NextFireTimes = a.upcoming(f.Rec, 5)
	return t, nil
}

// ListRuns returns a task's run history, newest first.
func (a *Service) ListRuns(ctx context.Context, id, taskID string) ([]*taskdv1.Run, error) {
	if _, ok := a.cfg.Engine.LocalTask(id, taskID); ok {
		return nil, nil
	}
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	f, ok, err := a.cfg.Store.Find(cctx, id, taskID)
	if err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("task %s of identity %q: %w", taskID, id, outcome.ErrNotFound)
	}
	var runs []*taskdv1.Run
	if f.Every {
		runs, err = a.cfg.Store.EveryRunsOf(cctx, taskID)
	} else {
		runs, err = a.cfg.Store.Runs(cctx, id, taskID)
	}
	if err != nil {
		return nil, err
	}
	taskspec.MarkRemovedTriggers(f.Rec, runs)
	return runs, nil
}

// GetIdentity returns an identity's mapping and task count.
func (a *Service) GetIdentity(ctx context.Context, id string) (*taskdv1.Identity, error) {
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	owner, err := a.cfg.Map.Get(cctx, id)
	if err != nil {
		return nil, err
	}
	count, err := a.cfg.Store.CountBoth(cctx, id)
	if err != nil {
		return nil, err
	}
	if !owner.Mapped && count == 0 {
		return nil, fmt.Errorf("identity %q has no mapping and no tasks: %w", id, outcome.ErrNotFound)
	}
	out := &taskdv1.Identity{Identity: id, Mapped: owner.Mapped, Node: owner.Node, Epoch: owner.Epoch, TaskCount: count}
	status, err := a.identityStatus(cctx, id)
	if err != nil {
		return nil, err
	}
	if status != nil {
		out.Active, out.StatusNode, out.StatusSince = status.Active, status.Node, status.Since
	}
	return out, nil
}

// ListNodes returns the registered nodes, by name.
func (a *Service) ListNodes(ctx context.Context) ([]*taskdv1.Node, error) {
	nodes, _, err := a.listNodes(ctx)
	return nodes, err
}

// DescribeNodes is ListNodes with each node's standing: which one is the
// placement leader, and how long each lease has left.
func (a *Service) DescribeNodes(ctx context.Context) ([]*taskdv1.Node, error) {
	nodes, leases, err := a.listNodes(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	leader, err := a.cfg.Client.Get(cctx, a.cfg.Keys.Leader())
	if err != nil {
		return nil, fmt.Errorf("read the placement leader: %w", err)
	}
	holder := ""
	if len(leader.Kvs) == 1 {
		holder = string(leader.Kvs[0].Value) // "name incarnation"
	}
	for i, nd := range nodes {
		nd.Leader = holder == nd.Name+" "+nd.Incarnation
		ttl, err := a.cfg.Client.TimeToLive(cctx, leases[i])
		if err != nil {
			return nil, fmt.Errorf("read the lease of node %s: %w", nd.Name, err)
		}
		if ttl.TTL > 0 {
			nd.LeaseRemaining = durationpb.New(time.Duration(ttl.TTL) * time.Second)
		}
	}
	return nodes, nil
}

// listNodes reads the registrations, with the lease each is held under.
func (a *Service) listNodes(ctx context.Context) ([]*taskdv1.Node, []clientv3.LeaseID, error) {
	cctx, cancel := a.etcdCtx(ctx)
	defer cancel()
	resp, err := a.cfg.Client.Get(cctx, a.cfg.Keys.Nodes(), clientv3.WithPrefix())
	if err != nil {
		return nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	var out []*taskdv1.Node
	var leases []clientv3.LeaseID
	for _, kv := range resp.Kvs {
		leases = append(leases, clientv3.LeaseID(kv.Lease))
		var rec storev1.NodeRecord
		if err := proto.Unmarshal(kv.Value, &rec); err != nil {
			return nil, nil, fmt.Errorf("decode node %s: %w", strings.TrimPrefix(string(kv.Key), a.cfg.Keys.Nodes()), err)
		}
		owned, err := a.cfg.Map.CountOwned(cctx, rec.Name)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, &taskdv1.Node{
			Name: rec.Name, Incarnation: rec.Incarnation, Address: rec.Address, State: rec.State,
			StartedAt: rec.StartedAt, DispatchStart: rec.DispatchStart, IdentitiesOwned: owned, Kinds: rec.Kinds,
		})
	}
	return out, leases, nil
}

// toTask is the API view of a record: its triggers show their names,
// those of a legacy record as they are read.
func toTask(rec *storev1.TaskRecord, rev int64) *taskdv1.Task {
	rec = taskspec.WithTriggerNames(rec)
	t := &taskdv1.Task{
		Id:         rec.Id,
		Spec:       rec.Spec,
		State:      rec.State,
		CreatedAt:  rec.CreatedAt,
		RunCount:   rec.RunCount,
		Attempt:    rec.Attempt,
		LastRun:    rec.LastRun,
		FinishedAt: rec.FinishedAt,
		Revision:   rev,
		Misfires:   rec.Misfires,
	}
	switch at, ok := record.ArmedFire(rec, time.Now()); {
	case ok:
		t.NextFireTime = timestamppb.New(at)
	case rec.Running == nil:
		if at, purge, ok := record.Due(rec, 0, record.Timing{Now: time.Now()}); ok && !purge {
			t.NextFireTime = timestamppb.New(at)
		}
	}
	return t
}

// view is the API view of a record as this node sees it: toTask, with the
// pauses in force and, if this node owns the task, what its due run waits
// for.
func (a *Service) view(rec *storev1.TaskRecord, rev int64) *taskdv1.Task {
	t := toTask(rec, rev)
	h := a.cfg.Engine.Holds(rec)
	t.PausedBy = h.PausedBy
	if h.Waiting != "" && !record.IsFinal(t.State) && rec.Running == nil {
		t.Waiting, t.WaitingSince, t.WaitingReason = h.Waiting, timestamppb.New(h.WaitingSince), h.WaitingReason
	}
	if t.Paused = len(t.PausedBy) > 0; t.Paused && !record.IsFinal(t.State) && t.State != taskdv1.TaskState_TASK_STATE_RUNNING {
		t.State = taskdv1.TaskState_TASK_STATE_PAUSED
	}
	return t
}

// identityStatus reads an identity's last vote.
func (a *Service) identityStatus(ctx context.Context, id string) (*storev1.Status, error) {
	resp, err := a.cfg.Client.Get(ctx, a.cfg.Keys.Status(id))
	if err != nil {
		return nil, fmt.Errorf("read status of %q: %w", id, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	var s storev1.Status
	if err := proto.Unmarshal(resp.Kvs[0].Value, &s); err != nil {
		return nil, fmt.Errorf("decode status of %q: %w", id, err)
	}
	return &s, nil
}

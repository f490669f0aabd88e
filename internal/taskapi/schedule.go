package taskapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/outcome"
	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/taskspec"
	"github.com/taskd/taskd/internal/writepath"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Scheduled is one accepted task.
type Scheduled struct {
	Task *taskdv1.Task
	// Existing is true when an idempotency key returned an earlier task.
	Existing bool
}

// Schedule validates and stores tasks (at most MaxBatch).
func (a *Service) Schedule(ctx context.Context, specs []*taskdv1.TaskSpec) ([]Scheduled, error) {
	if err := taskspec.CheckBatch(len(specs)); err != nil {
		return nil, err
	}
	kinds := a.clusterKinds(ctx)
	view := a.specView(func(k string) bool { return kinds[k] || a.cfg.Engine.ServesKind(k) })
	now := time.Now()
	recs := make([]*storev1.TaskRecord, len(specs))
	specs = taskspec.WithDefaultTrigger(specs)
	for i, s := range specs {
		if err := taskspec.CheckTask("", s, view); err != nil {
			return nil, taskspec.ErrorAt(i, err)
		}
		if err := taskspec.CheckServerNames("triggers", s.Triggers, nil); err != nil {
			return nil, taskspec.ErrorAt(i, err)
		}
		rec, err := a.newRecord("", s, now)
		if err != nil {
			return nil, taskspec.ErrorAt(i, err)
		}
		recs[i] = rec
		recs[i].Traceparent = a.cfg.TraceParent(ctx)
	}
	out := make([]Scheduled, len(specs))
	// Group by identity, keeping request order inside a group. A repeated
	// idempotency key inside the batch answers with the first task.
	byID := map[groupKey]*group{}
	var groups []*group
	dupOf := map[int]int{}
	firstKey := map[[2]string]int{}
	var locals []*storev1.TaskRecord
	for i, r := range recs {
		id := r.Spec.Identity
		how := storingOf(r.Spec)
		if how == nil {
			locals = append(locals, r)
			out[i] = Scheduled{Task: a.view(r, 0)}
			continue
		}
		if k := r.Spec.IdempotencyKey; k != "" {
			if j, ok := firstKey[[2]string{id, k}]; ok {
				dupOf[i] = j
				continue
			}
			firstKey[[2]string{id, k}] = i
		}
		gk := groupKey{id: id, how: how}
		g := byID[gk]
		if g == nil {
			g = &group{id: id, how: how}
			byID[gk] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	if len(locals) > 0 {
		if err := a.cfg.LocalRefs.Put(ctx, locals, a.cfg.Engine.AddLocal); err != nil {
			return nil, err
		}
	}
	if len(groups) > 0 {
		if err := a.storeBatch(ctx, groups, recs, out); err != nil {
			return nil, err
		}
	}
	for i, j := range dupOf {
		out[i] = Scheduled{Task: out[j].Task, Existing: true}
	}
	for i, s := range out {
		if !s.Existing {
			continue
		}
		if f := taskspec.IdempotencyMismatch(specs[i], s.Task.GetSpec()); f != "" {
			return nil, &taskspec.SpecError{Index: i, Field: "idempotency_key", Err: outcome.ErrAlreadyExists,
				Reason: fmt.Sprintf("%q already names task %s, whose %s differs from this request's; use another key for another task",
					specs[i].IdempotencyKey, s.Task.GetId(), f)}
		}
	}
	return out, nil
}

// group is the durable tasks of one identity and scope in a schedule
// request.
type group struct {
	id  string
	how storing // by its tasks' scope (storing.go)
	idx []int   // indexes into the request
}

// groupKey names a group: its identity and how its tasks are stored.
type groupKey struct {
	id  string
	how storing
}

// storeBatch writes the groups in one Txn (all or none) when it fits in
// one etcd request (the batcher sizes it as etcd will: bytes and
// operations), else it splits the request in halves, by identity and then
// an identity's tasks, until each part fits (each part all or none). One
// task too large to store even alone fails the request with a SpecError
// wrapping writepath.ErrTooLarge (parts stored before it stay stored).
func (a *Service) storeBatch(ctx context.Context, groups []*group, recs []*storev1.TaskRecord, out []Scheduled) error {
	err := a.storeGroups(ctx, groups, recs, out)
	if !errors.Is(err, writepath.ErrTooLarge) {
		return err
	}
	if len(groups) > 1 {
		half := len(groups) / 2
		if err := a.storeBatch(ctx, groups[:half], recs, out); err != nil {
			return err
		}
		return a.storeBatch(ctx, groups[half:], recs, out)
	}
	g := groups[0]
	var live []int
	for _, i := range g.idx {
		if out[i].Task == nil {
			live = append(live, i)
		}
	}
	if len(live) <= 1 {
		if len(live) == 1 {
			return &taskspec.SpecError{Index: live[0], Reason: "the task cannot be stored", Err: err}
		}
		return err
	}
	half := len(live) / 2
	for _, part := range [][]int{live[:half], live[half:]} {
		if err := a.storeBatch(ctx, []*group{{id: g.id, how: g.how, idx: part}}, recs, out); err != nil {
			return err
		}
	}
	return nil
}

// storeGroups writes the tasks of several identities in one Txn, with each
// identity's mapping compare: an unmapped identity is mapped in the same
// Txn, and tasks of an identity another node owns get a handoff entry in
// that node's area.
func (a *Service) storeGroups(ctx context.Context, groups []*group, recs []*storev1.TaskRecord, out []Scheduled) error {
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			return fmt.Errorf("store tasks: the identities' mappings kept changing: %w", outcome.ErrConflict)
		}
		var (
			txn   = a.cfg.Shapes.Schedule()
			plans []*planned
			place *placement.Candidate // the node unmapped identities are mapped to
		)
		for _, g := range groups {
			p := &planned{g: g}
			for _, i := range g.idx {
				if out[i].Task == nil { // else answered by an idempotency key in an earlier attempt
					p.live = append(p.live, i)
				}
			}
			if err := g.how.add(ctx, a, txn, p, recs, attempt, &place); err != nil {
				return err
			}
			plans = append(plans, p)
		}
		if txn.Empty() {
			return nil
		}
		res := a.cfg.Batch.Do(ctx, txn.Txn())
		if res.Err != nil {
			if !res.NotSent {
				for _, p := range plans {
					p.g.how.unknown(a, p)
				}
			}
			return fmt.Errorf("store tasks: %w", res.Err)
		}
		if !res.OK {
			if err := a.calendarsStillExist(ctx, groups, recs); err != nil {
				return err
			}
			for _, p := range plans {
				if err := a.resolveIdempotent(ctx, p.g.id, p.live, recs, out); err != nil {
					return err
				}
				p.g.how.refused(ctx, a, p)
			}
			continue
		}
		for _, p := range plans {
			p.g.how.stored(a, p, recs, res.Rev)
			for _, i := range p.live {
				out[i] = Scheduled{Task: a.view(recs[i], res.Rev)}
			}
		}
		return nil
	}
}

// newRecord resolves a validated spec into a new task record: its
// triggers as taskspec.ResolveTriggers makes them (an error names the field under
// field, "" for relative to the spec), recovery on by default, an unnamed
// trigger named by its index.
func (a *Service) newRecord(field string, s *taskdv1.TaskSpec, now time.Time) (*storev1.TaskRecord, error) {
	spec := proto.Clone(s).(*taskdv1.TaskSpec)
	if spec.RequestsRecovery == nil {
		t := true
		spec.RequestsRecovery = &t
	}
	if err := taskspec.ResolveTriggers(taskspec.Subfield(field, "triggers"), spec, now); err != nil {
		return nil, err
	}
	rec := &storev1.TaskRecord{
		Id:        a.cfg.IDs.New(),
		Spec:      spec,
		State:     taskdv1.TaskState_TASK_STATE_SCHEDULED,
		CreatedAt: timestamppb.New(now),
	}
	taskspec.NameNewTriggers(rec)
	record.InitTriggers(rec, a.cfg.Calendars.Exclusions(rec.Spec.Calendars))
	record.Settle(rec, now)
	return rec, nil
}

// resolveIdempotent answers, from etcd, the tasks whose idempotency key is
// already taken.
func (a *Service) resolveIdempotent(ctx context.Context, id string, live []int, recs []*storev1.TaskRecord, out []Scheduled) error {
	for _, i := range live {
		k := recs[i].Spec.IdempotencyKey
		if k == "" {
			continue
		}
		cctx, cancel := a.etcdCtx(ctx)
		taskID, ok, err := a.cfg.Store.IdemLookup(cctx, id, k)
		if err == nil && ok {
			var f pending.Found
			f, ok, err = a.cfg.Store.Find(cctx, id, taskID)
			if err == nil && ok {
				out[i] = Scheduled{Task: a.view(f.Rec, f.Rev), Existing: true}
			}
		}
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// pick is the records at idx.
func pick(recs []*storev1.TaskRecord, idx []int) []*storev1.TaskRecord {
	out := make([]*storev1.TaskRecord, len(idx))
	for j, i := range idx {
		out[j] = recs[i]
	}
	return out
}

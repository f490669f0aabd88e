package taskservice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/placement"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/taskspec"
	"github.com/taskd/taskd/pkg/identity"
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

// Schedule validates and stores tasks (at most MaxBatch) and returns them in
// request order. Durable tasks are in etcd when it returns: the tasks of one
// identity are written in one Txn together with the identity's mapping
// compare (and, for an unmapped identity, the new mapping).
//
// An error about one spec is a *SpecError: it holds the spec's index and
// names the field relative to the spec ("triggers[0].cron.expression"),
// and its message names it as a ScheduleTasks request does
// ("tasks[2].triggers[0].cron.expression"); SpecError.In names it under
// another path. An error about the specs as a whole (none, more than
// MaxBatch) is an *InvalidArgumentError naming "tasks".
func (n *Node) Schedule(ctx context.Context, specs []*taskdv1.TaskSpec) ([]Scheduled, error) {
	if err := taskspec.CheckBatch(len(specs)); err != nil {
		return nil, err
	}
	kinds := n.clusterKinds(ctx)
	view := n.specView(func(k string) bool { return kinds[k] || n.servesKind(k) })
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
		rec, err := n.newRecord("", s, now)
		if err != nil {
			return nil, taskspec.ErrorAt(i, err)
		}
		recs[i] = rec
		recs[i].Traceparent = TraceParent(ctx)
	}
	out := make([]Scheduled, len(specs))
	// Group by identity, keeping request order inside a group. A repeated
	// idempotency key inside the batch answers with the first task.
	byID := map[string]*group{}
	var groups []*group
	dupOf := map[int]int{}
	firstKey := map[[2]string]int{}
	var locals []*storev1.TaskRecord
	for i, r := range recs {
		id := r.Spec.Identity
		if r.Spec.NonDurable {
			locals = append(locals, r)
			out[i] = Scheduled{Task: n.view(r, 0)}
			continue
		}
		if k := r.Spec.IdempotencyKey; k != "" {
			if j, ok := firstKey[[2]string{id, k}]; ok {
				dupOf[i] = j
				continue
			}
			firstKey[[2]string{id, k}] = i
		}
		every := r.Spec.Scope == taskdv1.Scope_SCOPE_EVERY_NODE
		gk := id
		if every {
			gk = "every\x00" + id
		}
		g := byID[gk]
		if g == nil {
			g = &group{id: id, every: every}
			byID[gk] = g
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
	}
	if len(locals) > 0 {
		if err := n.addLocalTasks(ctx, locals); err != nil {
			return nil, err
		}
	}
	if len(groups) > 0 {
		if err := n.storeBatch(ctx, groups, recs, out); err != nil {
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
			return nil, &SpecError{Index: i, Field: "idempotency_key", Err: ErrAlreadyExists,
				Reason: fmt.Sprintf("%q already names task %s, whose %s differs from this request's; use another key for another task",
					specs[i].IdempotencyKey, s.Task.GetId(), f)}
		}
	}
	return out, nil
}

// group is the durable tasks of one identity and scope in a schedule
// request.
type group struct {
	id    string
	every bool  // scope EVERY_NODE: stored once, no mapping
	idx   []int // indexes into the request
}

// storeBatch writes the groups in one Txn (all or none) when it fits in
// one etcd request (the batcher sizes it as etcd will: bytes and
// operations), else it splits the request in halves, by identity and then
// an identity's tasks, until each part fits (each part all or none). One
// task too large to store even alone fails the request with a SpecError
// wrapping ErrTooLarge (parts stored before it stay stored).
func (n *Node) storeBatch(ctx context.Context, groups []*group, recs []*storev1.TaskRecord, out []Scheduled) error {
	err := n.storeGroups(ctx, groups, recs, out)
	if !errors.Is(err, ErrTooLarge) {
		return err
	}
	if len(groups) > 1 {
		half := len(groups) / 2
		if err := n.storeBatch(ctx, groups[:half], recs, out); err != nil {
			return err
		}
		return n.storeBatch(ctx, groups[half:], recs, out)
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
			return &SpecError{Index: live[0], Reason: "the task cannot be stored", Err: err}
		}
		return err
	}
	half := len(live) / 2
	for _, part := range [][]int{live[:half], live[half:]} {
		if err := n.storeBatch(ctx, []*group{{id: g.id, every: g.every, idx: part}}, recs, out); err != nil {
			return err
		}
	}
	return nil
}

// storeGroups writes the tasks of several identities in one Txn, with each
// identity's mapping compare: an unmapped identity is mapped in the same
// Txn, and tasks of an identity another node owns get a handoff entry in
// that node's area.
func (n *Node) storeGroups(ctx context.Context, groups []*group, recs []*storev1.TaskRecord, out []Scheduled) error {
	type planned struct {
		g     *group
		owner identity.Owner
		mine  bool
		live  []int
	}
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			return fmt.Errorf("store tasks: the identities' mappings kept changing: %w", ErrConflict)
		}
		var (
			txn   = n.shapes.Schedule()
			plans []planned
			place *placement.Candidate // the node unmapped identities are mapped to
		)
		for _, g := range groups {
			if g.every {
				p := planned{g: g}
				for _, i := range g.idx {
					if out[i].Task != nil {
						continue
					}
					p.live = append(p.live, i)
					if err := txn.EveryTask(recs[i]); err != nil {
						return err
					}
				}
				plans = append(plans, p)
				continue
			}
			// The first attempt needs no read: the owner comes from memory,
			// or is guessed (a cached remote owner, else unmapped) and the
			// Txn's compare checks the guess; a wrong guess costs a retry.
			owner, err := n.ownerOf(ctx, g.id, attempt > 0)
			if err != nil {
				return err
			}
			target, targetInc := owner.Node, owner.Incarnation
			if owner.Mapped {
				txn.Owned(g.id, owner.Epoch)
			} else {
				if place == nil {
					if place, err = n.placement(ctx); err != nil {
						return err
					}
					txn.Target(place.Name, place.Lease)
				}
				target, targetInc = place.Name, place.Inc
				txn.Map(g.id, target, targetInc)
			}
			p := planned{g: g, owner: owner, mine: target == n.cfg.Name && targetInc == n.incarnation}
			for _, i := range g.idx {
				if out[i].Task != nil {
					continue // answered by an idempotency key in an earlier attempt
				}
				p.live = append(p.live, i)
				if err := txn.Task(recs[i]); err != nil {
					return err
				}
			}
			if !p.mine {
				// The owner loads each task from its handoff area.
				for _, i := range p.live {
					op, err := n.handoffOp(target, g.id, recs[i].Id)
					if err != nil {
						return err
					}
					txn.Also(op)
				}
			}
			plans = append(plans, p)
		}
		if txn.Empty() {
			return nil
		}
		res := n.batch.Do(ctx, txn.Txn())
		if res.Err != nil {
			if !res.NotSent {
				// Maybe applied: the identities this node would own are read
				// again once the Txn is surely over, so that a task that was
				// stored is run (the others' owners get the handoff entries
				// written in the same Txn).
				for _, p := range plans {
					if p.mine {
						n.repair(p.g.id)
						n.repairAfter(p.g.id, n.cfg.EtcdTimeout)
					}
				}
			}
			return fmt.Errorf("store tasks: %w", res.Err)
		}
		if !res.OK {
			if err := n.calendarsStillExist(ctx, groups, recs); err != nil {
				return err
			}
			for _, p := range plans {
				if err := n.resolveIdempotent(ctx, p.g.id, p.live, recs, out); err != nil {
					return err
				}
				if !p.g.every {
					n.forgetOwner(ctx, p.g.id, p.owner)
				}
			}
			continue
		}
		rev := res.Rev
		for _, p := range plans {
			if p.g.every {
				for _, i := range p.live {
					b, _ := pending.Encode(recs[i])
					n.everyNode.Learn(p.g.id, b, rev)
					out[i] = Scheduled{Task: n.view(recs[i], rev)}
				}
				continue
			}
			epoch := p.owner.Epoch
			if !p.owner.Mapped {
				epoch = rev
			}
			if p.mine && len(p.live) > 0 {
				n.addOwned(p.g.id, epoch, p.live, recs, rev)
			}
			for _, i := range p.live {
				out[i] = Scheduled{Task: n.view(recs[i], rev)}
			}
		}
		return nil
	}
}

// newRecord resolves a validated spec into a new task record: its
// triggers as taskspec.ResolveTriggers makes them (an error names the field under
// field, "" for relative to the spec), recovery on by default, an unnamed
// trigger named by its index.
func (n *Node) newRecord(field string, s *taskdv1.TaskSpec, now time.Time) (*storev1.TaskRecord, error) {
	spec := proto.Clone(s).(*taskdv1.TaskSpec)
	if spec.RequestsRecovery == nil {
		t := true
		spec.RequestsRecovery = &t
	}
	if err := taskspec.ResolveTriggers(taskspec.Subfield(field, "triggers"), spec, now); err != nil {
		return nil, err
	}
	rec := &storev1.TaskRecord{
		Id:        n.ids.New(),
		Spec:      spec,
		State:     taskdv1.TaskState_TASK_STATE_SCHEDULED,
		CreatedAt: timestamppb.New(now),
	}
	taskspec.NameNewTriggers(rec)
	record.InitTriggers(rec, n.cals.Exclusions(rec.Spec.Calendars))
	record.Settle(rec, now)
	return rec, nil
}

// resolveIdempotent answers, from etcd, the tasks whose idempotency key is
// already taken.
func (n *Node) resolveIdempotent(ctx context.Context, id string, live []int, recs []*storev1.TaskRecord, out []Scheduled) error {
	for _, i := range live {
		k := recs[i].Spec.IdempotencyKey
		if k == "" {
			continue
		}
		cctx, cancel := n.etcdCtx(ctx)
		taskID, ok, err := n.store.IdemLookup(cctx, id, k)
		if err == nil && ok {
			var f pending.Found
			f, ok, err = n.store.Find(cctx, id, taskID)
			if err == nil && ok {
				out[i] = Scheduled{Task: n.view(f.Rec, f.Rev), Existing: true}
			}
		}
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// ownerOf returns the owner of id: from memory when this node owns it;
// else, with read, from etcd (and remembered), without read a guess: the
// remembered owner or unmapped. A guess is only ever used behind a Txn
// compare that checks it.
func (n *Node) ownerOf(ctx context.Context, id string, read bool) (identity.Owner, error) {
	n.mu.Lock()
	st := n.idents[id]
	if st != nil && !st.lost && st.epoch > 0 {
		o := identity.Owner{Identity: id, Mapped: true, Node: n.cfg.Name, Incarnation: n.incarnation, Epoch: st.epoch}
		n.mu.Unlock()
		return o, nil
	}
	if !read {
		o, ok := n.remoteOwners[id]
		n.mu.Unlock()
		if !ok {
			o = identity.Owner{Identity: id}
		}
		return o, nil
	}
	n.mu.Unlock()
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	o, err := n.idmap.Get(cctx, id)
	if err == nil && o.Mapped && (o.Node != n.cfg.Name || o.Incarnation != n.incarnation) {
		n.mu.Lock()
		if len(n.remoteOwners) >= maxRemoteOwners {
			clear(n.remoteOwners) // a bounded cache: start again
		}
		n.remoteOwners[id] = o
		n.mu.Unlock()
	}
	return o, err
}

// maxRemoteOwners bounds the cache of identities' owners on other nodes.
const maxRemoteOwners = 1 << 16

// forgetOwner drops a cached ownership that a failed fence proved stale.
func (n *Node) forgetOwner(ctx context.Context, id string, owner identity.Owner) {
	if owner.Node != n.cfg.Name || owner.Incarnation != n.incarnation {
		return
	}
	n.mu.Lock()
	st := n.idents[id]
	n.mu.Unlock()
	if st == nil {
		return
	}
	cctx, cancel := n.etcdCtx(ctx)
	defer cancel()
	if cur, err := n.idmap.Get(cctx, id); err == nil {
		n.identityMoved(st, cur)
	}
}

// placement picks the node for an unmapped identity: this node if it is
// RUNNING, else the least-loaded RUNNING node, else this node. The Txn that
// maps identities to it carries its registration compare (writepath.Schedule.Target).
func (n *Node) placement(ctx context.Context) (*placement.Candidate, error) {
	if n.State() == taskdv1.NodeState_NODE_STATE_RUNNING {
		return n.self(), nil
	}
	cs, err := n.cluster.Candidates(ctx)
	if err != nil {
		return nil, err
	}
	if live := placement.Running(cs, n.cfg.Name); len(live) > 0 {
		return placement.LeastLoaded(live), nil
	}
	return n.self(), nil
}

// self is this node as a placement target.
func (n *Node) self() *placement.Candidate {
	n.mu.Lock()
	defer n.mu.Unlock()
	return &placement.Candidate{Name: n.cfg.Name, Inc: n.incarnation, Lease: int64(n.member.Lease()), State: n.state}
}

// addOwned queues newly stored tasks of an identity this node owns.
func (n *Node) addOwned(id string, epoch int64, idx []int, recs []*storev1.TaskRecord, rev int64) {
	stale := epoch < n.member.RegisteredRev()
	if stale {
		// Mapped here before the node's current registration: it is
		// re-mapped (and its tasks loaded) by a read of the identity.
		n.repair(id)
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.idents[id]
	if st == nil || st.lost || st.epoch < epoch {
		if st == nil || st.lost {
			st = &identState{name: id, scope: ownedScope{}}
			n.idents[id] = st
		}
		st.epoch = epoch
	}
	if st.epoch != epoch {
		return // a newer adoption will load them
	}
	for _, i := range idx {
		r := recs[i]
		if st.tasks.get(r.Id) != nil {
			// Already loaded (a handoff or adoption that raced this
			// schedule read it from etcd): one entry per task, so that it
			// is never queued, and started, twice.
			continue
		}
		e := &entry{ident: st, id: r.Id, rec: r, rev: rev, idx: -1}
		st.tasks.put(e)
		n.reschedLocked(e)
	}
}

// addLocal queues a non-durable task.
func (n *Node) addLocal(r *storev1.TaskRecord) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id := r.Spec.Identity
	st := n.local[id]
	if st == nil {
		st = &identState{name: id, scope: localScope{}}
		n.local[id] = st
	}
	e := &entry{ident: st, id: r.Id, rec: r, idx: -1}
	st.tasks.put(e)
	n.reschedLocked(e)
}

// servesKind reports whether this node runs kind now: by a handler of its
// own or a connected remote worker, or will when one connects (a declared
// kind). It is asked beside clusterKinds, whose cache may be older than a
// worker that just connected.
func (n *Node) servesKind(kind string) bool {
	return n.cfg.Handlers[kind] != nil || n.declared[kind] ||
		n.cfg.Remote != nil && slices.Contains(n.cfg.Remote.Kinds(), kind)
}

// clusterKinds is the set of kinds some registered node handles, cached
// for a second so scheduling does not read the node list every time.
func (n *Node) clusterKinds(ctx context.Context) map[string]bool {
	n.kindsMu.Lock()
	defer n.kindsMu.Unlock()
	if n.kinds != nil && time.Since(n.kindsAt) < time.Second {
		return n.kinds
	}
	kinds := map[string]bool{}
	for _, k := range n.Kinds() { // its handlers' and its remote workers'
		kinds[k] = true
	}
	nodes, err := n.ListNodes(ctx)
	if err != nil {
		return kinds // etcd away: the write that follows will say so
	}
	for _, nd := range nodes {
		if nd.State == taskdv1.NodeState_NODE_STATE_STOPPED {
			continue
		}
		for _, k := range nd.Kinds {
			kinds[k] = true
		}
	}
	n.kinds, n.kindsAt = kinds, time.Now()
	return kinds
}

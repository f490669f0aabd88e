//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// rpcTimeout bounds one workload RPC; a paused node makes RPCs hang, and
// a workload client then moves on.
const rpcTimeout = 5 * time.Second

// Task kinds of the workload (the trigger it was scheduled with).
const (
	shapeNow      = "once-now"
	shapeDelayed  = "once-delayed"
	shapePeriodic = "periodic"
)

// ackedTask is a task whose schedule a node acknowledged, with what was
// acknowledged about it afterwards.
type ackedTask struct {
	id, identity, shape string
	count               int64 // periodic: the number of periods
	acked               time.Time
	cancelTried         bool        // a cancel was sent (acknowledged or not)
	cancelAcked         []time.Time // when acknowledged cancels were sent
	runNowAcked         []time.Time // when acknowledged run-now requests were sent
}

// ledger records what the cluster acknowledged; safe for concurrent use.
type ledger struct {
	mu          sync.Mutex
	tasks       map[string]*ackedTask
	order       []string // task ids in acknowledgement order
	scheduleErr int      // schedules given up after every retry
	moves       int      // acknowledged MoveIdentity calls
	moveErrs    int
	rpcErrs     map[string]int // by method and status code
}

func newLedger() *ledger {
	return &ledger{tasks: map[string]*ackedTask{}, rpcErrs: map[string]int{}}
}

func (l *ledger) addTask(t *ackedTask) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.tasks[t.id]; ok {
		return // an idempotent retry answered with the same task
	}
	l.tasks[t.id] = t
	l.order = append(l.order, t.id)
}

func (l *ledger) rpcErr(method string, err error) {
	l.mu.Lock()
	l.rpcErrs[method+" "+status.Code(err).String()]++
	l.mu.Unlock()
}

// pick returns a random acknowledged task, or nil.
func (l *ledger) pick(r *rand.Rand) *ackedTask {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.order) == 0 {
		return nil
	}
	return l.tasks[l.order[r.IntN(len(l.order))]]
}

// snapshot returns the acknowledged tasks in acknowledgement order.
func (l *ledger) snapshot() []*ackedTask {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*ackedTask, 0, len(l.order))
	for _, id := range l.order {
		t := *l.tasks[id]
		out = append(out, &t)
	}
	return out
}

// workload drives the API: schedules, run-now, cancels and moves against
// random nodes, owners or not.
type workload struct {
	nodes      []*taskdNode
	identities []string
	ledger     *ledger
}

func newWorkload(nodes []*taskdNode, identities int) *workload {
	w := &workload{nodes: nodes, ledger: newLedger()}
	for i := 0; i < identities; i++ {
		w.identities = append(w.identities, fmt.Sprintf("user-%04d", i))
	}
	return w
}

func (w *workload) node(r *rand.Rand) *taskdNode { return w.nodes[r.IntN(len(w.nodes))] }

// run runs one workload client until ctx ends.
func (w *workload) run(ctx context.Context, r *rand.Rand, client int) {
	for seq := 0; ctx.Err() == nil; seq++ {
		switch x := r.IntN(100); {
		case x < 40:
			w.schedule(ctx, r, shapeNow, fmt.Sprintf("c%d-%d", client, seq))
		case x < 60:
			w.schedule(ctx, r, shapeDelayed, fmt.Sprintf("c%d-%d", client, seq))
		case x < 72:
			w.schedule(ctx, r, shapePeriodic, fmt.Sprintf("c%d-%d", client, seq))
		case x < 82:
			w.runNow(ctx, r)
		case x < 88:
			w.cancel(ctx, r)
		default:
			w.move(ctx, r, w.identities[r.IntN(len(w.identities))])
		}
	}
}

// schedule schedules one task, retrying with the same idempotency key on
// other nodes until one acknowledges it (or ctx ends): an unanswered
// request may have stored the task, and the key makes the retry answer
// with it rather than store a second one.
func (w *workload) schedule(ctx context.Context, r *rand.Rand, shape, key string) {
	id := w.identities[r.IntN(len(w.identities))]
	// The handler sleeps 20-300 ms: the payload names the seconds.
	payload := fmt.Sprintf("%.3f\n", 0.02+0.28*r.Float64())
	spec := &taskdv1.TaskSpec{
		Identity: id, Kind: handlerKind, Payload: []byte(payload),
		Scope: taskdv1.Scope_SCOPE_IDENTITY, IdempotencyKey: key,
	}
	var count int64
	switch shape {
	case shapeNow:
		spec.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}}
	case shapeDelayed:
		d := time.Duration(200+r.IntN(4800)) * time.Millisecond
		spec.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{Delay: durationpb.New(d)}}}}
	case shapePeriodic:
		count = int64(2 + r.IntN(4))
		spec.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
			Interval: durationpb.New(time.Second), Count: count,
		}}}}
		// Every period runs even when a fault delays it past the misfire
		// threshold, so a periodic task's expected runs are exactly count.
		spec.Misfire = taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL
	}
	for attempt := 0; attempt < 5 && ctx.Err() == nil; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		resp, err := w.node(r).client.ScheduleTask(rctx, &taskdv1.ScheduleTaskRequest{Task: spec})
		cancel()
		if err == nil {
			w.ledger.addTask(&ackedTask{id: resp.GetTask().GetId(), identity: id, shape: shape, count: count, acked: time.Now()})
			return
		}
		w.ledger.rpcErr("ScheduleTask", err)
	}
	w.ledger.mu.Lock()
	w.ledger.scheduleErr++
	w.ledger.mu.Unlock()
}

func (w *workload) runNow(ctx context.Context, r *rand.Rand) {
	t := w.ledger.pick(r)
	if t == nil {
		return
	}
	sent := time.Now()
	rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := w.node(r).client.RunTaskNow(rctx, &taskdv1.RunTaskNowRequest{Identity: t.identity, TaskId: t.id})
	if err != nil {
		w.ledger.rpcErr("RunTaskNow", err)
		return
	}
	w.ledger.mu.Lock()
	w.ledger.tasks[t.id].runNowAcked = append(w.ledger.tasks[t.id].runNowAcked, sent)
	w.ledger.mu.Unlock()
}

func (w *workload) cancel(ctx context.Context, r *rand.Rand) {
	t := w.ledger.pick(r)
	if t == nil {
		return
	}
	w.ledger.mu.Lock()
	w.ledger.tasks[t.id].cancelTried = true
	w.ledger.mu.Unlock()
	sent := time.Now()
	rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := w.node(r).client.CancelTask(rctx, &taskdv1.CancelTaskRequest{Identity: t.identity, TaskId: t.id})
	if err != nil {
		w.ledger.rpcErr("CancelTask", err)
		return
	}
	w.ledger.mu.Lock()
	w.ledger.tasks[t.id].cancelAcked = append(w.ledger.tasks[t.id].cancelAcked, sent)
	w.ledger.mu.Unlock()
}

// move moves identity to a random node, asking a random node.
func (w *workload) move(ctx context.Context, r *rand.Rand, identity string) bool {
	to := w.node(r).name
	rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := w.node(r).client.MoveIdentity(rctx, &taskdv1.MoveIdentityRequest{Identity: identity, ToNode: to})
	w.ledger.mu.Lock()
	defer w.ledger.mu.Unlock()
	if err != nil {
		w.ledger.moveErrs++
		w.ledger.rpcErrs["MoveIdentity "+status.Code(err).String()]++
		return false
	}
	w.ledger.moves++
	return true
}

// usedIdentities returns the identities that have acknowledged tasks.
func (w *workload) usedIdentities() []string {
	w.ledger.mu.Lock()
	defer w.ledger.mu.Unlock()
	seen := map[string]bool{}
	for _, t := range w.ledger.tasks {
		seen[t.identity] = true
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

package taskservice

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/pending"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// execute calls the handler of a started run and commits its result.
// entered is closed just before the handler is called, so that the
// launcher can call one identity's handlers in order.
func (n *Node) execute(e *entry, p startPlan, epoch, rev int64, entered chan<- struct{}) {
	defer n.runs.Done()
	defer n.release()
	spec := p.rec.Spec
	run := &Run{
		Identity:  spec.Identity,
		TaskID:    e.id,
		Kind:      spec.Kind,
		Payload:   spec.Payload,
		Data:      spec.Data,
		Labels:    spec.Labels,
		RunNumber: p.runNumber,
		Attempt:   p.attempt,
		FireTime:  p.fire,
		Fence:     Fence{Epoch: epoch, Revision: rev},
		Node:      n.cfg.Name,
		Manual:    p.manual,
		Recovery:  p.recovery,
		Durable:   e.ident.durable,
	}
	res := runResult{started: time.Now(), fence: run.Fence, recovery: p.recovery}
	err := n.callHandler(run, spec.GetTimeout().AsDuration(), entered)
	res.ended = time.Now()
	classify(&res, run, err, n.runCtx.Err() != nil)
	n.commit(e, p, res, epoch, rev)
}

// callHandler runs the handler with the task's timeout; a panic is an error.
func (n *Node) callHandler(run *Run, timeout time.Duration, entered chan<- struct{}) (err error) {
	h := n.cfg.Handlers[run.Kind]
	if h == nil {
		close(entered)
		return Retry(fmt.Errorf("node %s has no handler for kind %q", n.cfg.Name, run.Kind))
	}
	if timeout <= 0 {
		timeout = n.cfg.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(n.runCtx, timeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	close(entered)
	err = h.Work(ctx, run)
	if err == nil && ctx.Err() != nil && n.runCtx.Err() == nil {
		// The handler ignored its deadline but returned nil: still a timeout.
		err = fmt.Errorf("run timed out after %s: %w", timeout, ctx.Err())
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && n.runCtx.Err() == nil {
		if _, ok := asOutcome(err); !ok {
			err = Retry(fmt.Errorf("run timed out after %s: %w", timeout, err))
		}
	}
	return err
}

// classify turns a handler's return into a run result.
func classify(res *runResult, run *Run, err error, stopping bool) {
	res.data, res.dataSet = run.newData, run.dataSet
	res.message = run.message
	setMsg := func(s string) {
		if !run.messageSet {
			res.message = s
		}
	}
	if err == nil {
		res.outcome = taskdv1.Outcome_OUTCOME_SUCCESS
		return
	}
	if stopping {
		res.outcome = taskdv1.Outcome_OUTCOME_INTERRUPTED
		setMsg("the node stopped during the run: " + err.Error())
		return
	}
	oe, ok := asOutcome(err)
	if !ok {
		res.outcome, res.retry = taskdv1.Outcome_OUTCOME_ERROR, true
		setMsg(err.Error())
		return
	}
	switch oe.kind {
	case outcomeWarning:
		res.outcome = taskdv1.Outcome_OUTCOME_WARNING
		setMsg(oe.msg)
	case outcomeRunAgain:
		res.outcome, res.again = taskdv1.Outcome_OUTCOME_SUCCESS, true
	case outcomeCancel:
		res.outcome, res.cancel = taskdv1.Outcome_OUTCOME_CANCELED, true
		setMsg(oe.msg)
	case outcomeSnooze:
		res.outcome, res.snooze = taskdv1.Outcome_OUTCOME_WARNING, oe.until
		setMsg(oe.Error())
	case outcomePermanent:
		res.outcome = taskdv1.Outcome_OUTCOME_ERROR
		setMsg(oe.Error())
	default:
		res.outcome, res.retry = taskdv1.Outcome_OUTCOME_ERROR, true
		setMsg(oe.Error())
	}
}

// maxMessage caps a run's message in history.
const maxMessage = 64 << 10

// commit stores a run's result in one Txn fenced on the identity's epoch and
// the task's revision (SPEC §2.2). If the task changed meanwhile (cancelled,
// run-now) the result is folded into the new record and tried again; if the
// identity's epoch changed, the run is DROPPED and the task stays for its
// owner.
func (n *Node) commit(e *entry, p startPlan, res runResult, epoch, rev int64) {
	st := e.ident
	if len(res.message) > maxMessage {
		res.message = res.message[:maxMessage]
	}
	base := p.rec
	outcomeEvent := EventSucceeded
	switch res.outcome {
	case taskdv1.Outcome_OUTCOME_ERROR, taskdv1.Outcome_OUTCOME_CANCELED:
		outcomeEvent = EventFailed
	case taskdv1.Outcome_OUTCOME_INTERRUPTED:
		outcomeEvent = EventInterrupted
	}
	ev := Event{Identity: st.name, TaskID: e.id, Kind: base.Spec.Kind, RunNumber: p.runNumber,
		Attempt: p.attempt, Fence: res.fence, Outcome: res.outcome, Message: res.message}
	if st.every {
		n.commitEvery(e, p, res, rev, ev, outcomeEvent)
		return
	}
	if !st.durable {
		rec := cloneRec(base)
		hist, next := applyResult(rec, p.marker, res, n.cfg.Name, jitter())
		_ = hist
		n.finishEntry(e, rec, 0)
		n.emitResult(ev, outcomeEvent, next, rec)
		return
	}
	delay := 50 * time.Millisecond
	for {
		rec := cloneRec(base)
		hist, next := applyResult(rec, p.marker, res, n.cfg.Name, jitter())
		ops, err := n.keys.HistoryOps(rec, hist, n.cfg.History)
		var put clientv3.Op
		if err == nil {
			put, err = n.keys.PutTask(rec)
		}
		if err != nil {
			n.log.Error("encode run result", "task", e.id, "error", err)
			return
		}
		out := n.batch.do(context.Background(), n.runFence(st.name, e.id, epoch, rev),
			append([]clientv3.Op{put}, ops...), n.runElse(st.name, e.id))
		if err := out.err; err != nil {
			if n.life.Err() != nil {
				// Stopping with etcd away: the marker stays and the next
				// start resolves the run as INTERRUPTED.
				n.log.Warn("commit abandoned at stop; the run will be resolved at the next start",
					"identity", st.name, "task", e.id, "run", p.runNumber, "error", err)
				return
			}
			n.log.Warn("commit failed; retrying", "identity", st.name, "task", e.id, "error", err)
			time.Sleep(delay) // owned by this run's goroutine; bounded backoff
			if delay < 2*time.Second {
				delay *= 2
			}
			continue
		}
		if out.ok {
			n.finishEntry(e, rec, out.rev)
			n.emitResult(ev, outcomeEvent, next, rec)
			return
		}
		owner, derr := identity.OwnerFromResponse(st.name, (*clientv3.GetResponse)(out.els[0].GetResponseRange()))
		if derr != nil || owner.Epoch != epoch {
			n.log.Info("run dropped: the identity's epoch changed under it", "identity", st.name,
				"task", e.id, "run", p.runNumber, "epoch", epoch, "now", owner.Epoch, "owner", owner.Node)
			ev.Type, ev.Outcome = EventDropped, taskdv1.Outcome_OUTCOME_DROPPED
			n.emit(ev)
			n.mu.Lock()
			e.running = false
			n.mu.Unlock()
			n.identityMoved(st, owner)
			return
		}
		kvs := out.els[1].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			n.mu.Lock()
			e.running = false
			n.removeEntryLocked(e)
			n.mu.Unlock()
			ev.Type = outcomeEvent
			n.emit(ev)
			return
		}
		fresh, derr := pending.Decode(kvs[0].Value)
		if derr != nil || fresh.Running == nil || fresh.Running.RunNumber != p.marker.RunNumber ||
			fresh.Running.Incarnation != n.incarnation {
			// Someone else settled this run: keep theirs.
			n.mu.Lock()
			e.running = false
			if derr == nil {
				e.rec, e.rev = fresh, kvs[0].ModRevision
			}
			n.reschedLocked(e)
			n.mu.Unlock()
			return
		}
		base, rev = fresh, kvs[0].ModRevision
	}
}

// finishEntry records the committed record and queues the task's next due time.
func (n *Node) finishEntry(e *entry, rec *storev1.TaskRecord, rev int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	e.rec, e.rev, e.running = rec, rev, false
	n.reschedLocked(e)
}

func (n *Node) emitResult(ev Event, outcome, next EventType, rec *storev1.TaskRecord) {
	ev.Type = outcome
	n.emit(ev)
	ev.Type = next
	switch next {
	case EventRetryScheduled:
		ev.Next = rec.GetRetryAt().AsTime()
	case EventNextScheduled:
		if at, _, ok := dueTime(rec, 0, time.Now()); ok {
			ev.Next = at
		}
	}
	n.emit(ev)
}

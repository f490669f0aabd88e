package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskd/taskd/internal/backoff"
	"github.com/taskd/taskd/internal/dispatch"
	"github.com/taskd/taskd/internal/held"
	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/taskspec"
	"github.com/taskd/taskd/internal/writepath"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// execute calls the handler of a started run and commits its result.
// entered is closed just before the handler is called, so that the
// launcher can call one identity's handlers in order.
func (n *Path) execute(e *held.Entry, f *held.Flight, p startPlan, ev Event, entered chan<- struct{}) {
	defer n.life.Runs.Done()
	// The run's worker slot and its identity's share are freed once its
	// handler has returned: the commit that follows is batched with others
	// and needs no slot, so a burst of short runs is bounded by handler
	// time, not by commit round trips. The kind's token (KindLimits) is
	// given back once the commit is done. A remote worker's slot the run
	// holds goes back too if the run was not handed to the worker.
	var freed bool
	free := func() {
		n.d.ReleaseFlightReservation(f)
		if !freed && !f.Slotless {
			n.d.Release()
			n.d.Lock()
			n.d.ReleaseShareLocked(e.Ident, 1)
			n.d.Unlock()
		}
		freed = true
	}
	defer n.d.RunEnded(f)
	defer free()
	epoch, rev := ev.Fence.Epoch, ev.Fence.Revision
	spec := p.Rec.Spec
	call := Call{
		Identity:  spec.Identity,
		TaskID:    e.ID,
		Kind:      spec.Kind,
		Payload:   spec.Payload,
		Data:      spec.Data,
		Labels:    spec.Labels,
		RunNumber: p.RunNumber,
		Attempt:   p.Attempt,
		FireTime:  p.Fire,
		Fence:     Fence{Epoch: epoch, Revision: rev},
		Node:      n.cfg.Name,
		Manual:    p.Manual,
		Recovery:  p.Recovery,
		Durable:   e.Ident.Scope.Owned(),
	}
	res := runResult{Result: record.Result{Started: time.Now(), Recovery: p.Recovery}, fence: call.Fence}
	runCtx, span := n.startRunSpan(f.Ctx, &call, p.Rec.Traceparent)
	defer endRunSpan(span, &res)
	if f.Ctx.Err() != nil {
		// Not to be called (its node lost its lease or stops, or an armed
		// run was disarmed): neither vetoed nor started.
		close(entered)
		res.Ended, res.NotCalled = time.Now(), true
		classify(&res, Answer{Err: notCalledErr(f.Ctx)}, nil)
		free()
		n.commit(e, f, p, res, epoch, rev)
		return
	}
	run := n.cfg.Caller.Prepare(call)
	if reason := n.veto(runCtx, run); reason != "" {
		ev.Type, ev.Message = EventVetoed, reason
		n.emit(ev)
		close(entered)
		res.Ended, res.Outcome, res.Message = time.Now(), taskdv1.Outcome_OUTCOME_VETOED, reason
		free()
		n.commit(e, f, p, res, epoch, rev)
		return
	}
	ev.Type = EventStarted
	n.emit(ev)
	a := n.callHandler(runCtx, f, &call, run, spec.GetTimeout().AsDuration(), entered)
	res.Ended = time.Now()
	classify(&res, a, context.Cause(f.Ctx))
	free()
	n.commit(e, f, p, res, epoch, rev)
}

// veto asks the node's vetoes whether run may start; it returns the first
// veto's reason, or "".
func (n *Path) veto(ctx context.Context, run Prepared) string {
	if reason := run.Veto(ctx); reason != "" {
		return taskspec.CleanMessage(reason)
	}
	return ""
}

// errNotCalled reports a run whose handler was not called: the node could
// not prove, right before the call, that its lease was live.
var errNotCalled = errors.New("handler not called: the node could not prove that its lease was live")

// notCalledErr is why the run of flight context ctx is not called: an
// armed run's disarming, or else errNotCalled.
func notCalledErr(ctx context.Context) error {
	if c := context.Cause(ctx); errors.Is(c, dispatch.ErrDisarmed) {
		return c
	}
	return errNotCalled
}

// callHandler runs the handler with the task's timeout; a panic is an error.
// The node's lease is checked immediately before the call (self-fencing):
// a node that cannot prove its lease is live calls no handler. runCtx is
// the flight's context carrying the run's span.
func (n *Path) callHandler(runCtx context.Context, f *held.Flight, c *Call, run Prepared, timeout time.Duration, entered chan<- struct{}) Answer {
	remote := !n.cfg.Local(c.Kind)
	if remote && !n.cfg.Remote {
		close(entered)
		return Answer{Err: fmt.Errorf("node %s has no handler for kind %q", n.cfg.Name, c.Kind)}
	}
	if timeout <= 0 {
		timeout = n.cfg.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(runCtx, timeout)
	defer cancel()
	if f.Ctx.Err() != nil || !n.member.Fresh() {
		close(entered)
		return Answer{Err: notCalledErr(f.Ctx)}
	}
	close(entered)
	var reserved any
	if remote {
		// The worker's slot was reserved before the start (internal/dispatch/workerwait.go).
		if reserved = n.d.TakeReservation(f); reserved == nil {
			return Answer{Err: fmt.Errorf("node %s: no worker of kind %q was reserved for the run", n.cfg.Name, c.Kind)}
		}
	}
	a := run.Work(ctx, reserved)
	if a.Err == nil && ctx.Err() != nil && f.Ctx.Err() == nil {
		// The handler ignored its deadline but returned nil: still a
		// timeout, and the run's history says so, not the note the handler
		// left for a success that did not count.
		a.Err, a.Ask = fmt.Errorf("run timed out after %s: %w", timeout, ctx.Err()), AskError
		a.MessageSet = false
	}
	if a.Err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && f.Ctx.Err() == nil && a.Ask == AskError {
		a.Err = fmt.Errorf("run timed out after %s: %w", timeout, a.Err)
	}
	return a
}

// classify turns what a handler returned into a run result. cause is why
// the run's context ended (the node stopped or lost its lease), or nil.
func classify(res *runResult, a Answer, cause error) {
	err := a.Err
	res.Data, res.DataSet = a.Data, a.DataSet
	res.Message = a.Message
	setMsg := func(s string) {
		if !a.MessageSet {
			res.Message = s
		}
	}
	if errors.Is(err, errNotCalled) || errors.Is(err, ErrLeaseNotProven) || errors.Is(err, dispatch.ErrDisarmed) {
		res.Outcome, res.NotCalled, res.Data, res.DataSet = taskdv1.Outcome_OUTCOME_INTERRUPTED, true, nil, false
		res.Message = err.Error()
		return
	}
	if err == nil {
		res.Outcome = taskdv1.Outcome_OUTCOME_SUCCESS
		return
	}
	if cause != nil {
		res.Outcome = taskdv1.Outcome_OUTCOME_INTERRUPTED
		setMsg(cause.Error() + ": " + err.Error())
		return
	}
	switch a.Ask {
	case AskError:
		res.Outcome, res.Retry = taskdv1.Outcome_OUTCOME_ERROR, true
		setMsg(err.Error())
	case AskWarning:
		res.Outcome = taskdv1.Outcome_OUTCOME_WARNING
		setMsg(a.Text)
	case AskRunAgain:
		res.Outcome, res.Again = taskdv1.Outcome_OUTCOME_SUCCESS, true
	case AskCancel:
		res.Outcome, res.Cancel = taskdv1.Outcome_OUTCOME_CANCELED, true
		setMsg(a.Text)
	case AskSnooze:
		res.Outcome, res.Snooze = taskdv1.Outcome_OUTCOME_WARNING, a.Until
		setMsg(a.Text)
	case AskPermanent:
		res.Outcome = taskdv1.Outcome_OUTCOME_ERROR
		setMsg(a.Text)
	default:
		res.Outcome, res.Retry, res.RetryAt = taskdv1.Outcome_OUTCOME_ERROR, true, a.Until
		setMsg(a.Text)
	}
}

// commit stores a run's result, for either scope, in one fenced Txn
// through the batcher, retrying with backoff while etcd fails. A result that
// cannot be encoded is recorded as a retryable ERROR instead, so a task
// never stays RUNNING. What the fence is, and what a failed fence means,
// depends on the scope (resultWrite, commitConflict).
func (n *Path) commit(e *held.Entry, f *held.Flight, p startPlan, res runResult, epoch, rev int64) {
	st := e.Ident
	res.Message = taskspec.CleanMessage(res.Message)
	n.limitOutcome(&res, p.Rec)
	outcomeEvent := outcomeEventOf(res.Outcome)
	ev := Event{Identity: st.Name, TaskID: e.ID, Kind: p.Rec.Spec.Kind, RunNumber: p.RunNumber,
		Attempt: p.Attempt, Fence: res.fence, Outcome: res.Outcome, Message: res.Message,
		FireTime: p.Fire, Duration: res.Ended.Sub(res.Started)}
	c := scopeImpl(st.Scope).beginCommit(n, e, f, p, res, ev, outcomeEvent, epoch, rev)
	if c == nil {
		return // recorded in memory only
	}
	bo := backoff.New(50*time.Millisecond, 2*time.Second)
	// A commit too large for etcd is made smaller, never retried as it is
	// (oversize.go): the result gives way to a failed run saying what was
	// too large, and if even that does not fit, the task's record to a DEAD
	// one without its large fields.
	var big oversize
	for {
		// An armed run not called is undone: what its start changed in the
		// task goes back to before the start (internal/dispatch/arming.go).
		undo := res.NotCalled && p.before != nil
		var rec *storev1.TaskRecord
		var hist *taskdv1.Run
		var next EventType
		if undo {
			rec = record.UndoStart(c.base, p.before, p.Rec)
		} else {
			rec = record.Clone(c.base)
			hist, next = applyResult(rec, p.Marker, res, n.cfg.Name, jitter())
		}
		if big.stripRecord {
			ev.Message = stripOversized(rec, hist, big.why, res.Ended)
			ev.Outcome, outcomeEvent, next = taskdv1.Outcome_OUTCOME_ERROR, EventFailed, EventFinalized
		}
		w, err := n.resultWrite(e, c, rec, hist)
		if err != nil {
			if res.encodeFailed {
				n.log.Error("run result cannot be stored; the marker stays for resolution", "task", e.ID, "error", err)
				n.d.EndFlight(f, nil, 0)
				return
			}
			// Settle the run as an ERROR rather than leave the task RUNNING.
			n.log.Error("run result cannot be stored; recording an error instead", "task", e.ID, "error", err)
			res = runResult{Result: res.failed("the run's result could not be stored: " + err.Error()),
				fence: res.fence, encodeFailed: true}
			ev.Outcome, ev.Message, outcomeEvent = res.Outcome, res.Message, EventFailed
			continue
		}
		// A commit outlives Stop's cancel: a run that ends while the node
		// stops is still recorded (bounded by EtcdTimeout).
		ctx, cancel := n.d.EtcdCtx(context.WithoutCancel(n.life.Ctx))
		out := n.writes.Batch.Do(ctx, w.txn)
		cancel()
		if errors.Is(out.Err, writepath.ErrTooLarge) {
			if !big.shrink(n, e, f, &res, &ev, &outcomeEvent, undo, out.Err) {
				return
			}
			continue
		}
		if out.Err != nil {
			c.maybeApplied = c.maybeApplied || !out.NotSent
			if n.life.Ctx.Err() != nil {
				// Stopping with etcd away: the marker stays and whoever owns the
				// task next resolves the run as INTERRUPTED.
				n.log.Warn("commit abandoned at stop; the run will be resolved by the task's next owner",
					"identity", st.Name, "task", e.ID, "run", p.RunNumber, "error", out.Err)
				n.d.EndFlight(f, nil, 0)
				return
			}
			n.log.Warn("commit failed; retrying", "identity", st.Name, "task", e.ID, "error", out.Err)
			bo.Wait(n.life.Ctx)
			continue
		}
		if out.OK {
			n.d.EndFlight(f, w.committed(out.Rev), out.Rev)
			if !undo {
				n.emitResult(ev, outcomeEvent, next, rec)
			}
			return
		}
		again, err := n.commitConflict(e, f, c, p, res, out.Refusal, ev, outcomeEvent)
		if errors.Is(err, writepath.ErrTooLarge) {
			// The result was too large to forward to the identity's new
			// owner.
			if !big.shrink(n, e, f, &res, &ev, &outcomeEvent, undo, err) {
				return
			}
			continue
		}
		if !again {
			return
		}
	}
}

// commitState is what a commit's fence stands on, updated as conflicts are
// folded in.
type commitState struct {
	base         *storev1.TaskRecord // the record the result is folded into
	epoch        int64               // IDENTITY: the identity's epoch
	rev          int64               // the task record's revision (EVERY_NODE: the shared record's)
	progRev      int64               // EVERY_NODE: this node's progress revision
	served       int64               // EVERY_NODE: the run-now request served last
	shared       *storev1.TaskRecord // EVERY_NODE: the shared record
	maybeApplied bool                // an earlier attempt's outcome is unknown
}

// resultTxn is one commit attempt's Txn, and what the entry holds after it.
type resultTxn struct {
	txn       writepath.Txn
	committed func(rev int64) *storev1.TaskRecord // the entry's record after the commit at rev (nil: leave it)
}

// resultWrite builds the Txn that commits rec (with its history entry
// hist) in e's scope:
//
//   - IDENTITY: the task and its history, fenced on the identity's epoch and
//     the task's revision; Else reads the mapping and the task.
//   - EVERY_NODE: this node's progress and history, fenced on the node's
//     registration, the shared record's revision and the progress
//     revision; Else reads the shared record.
func (n *Path) resultWrite(e *held.Entry, c *commitState, rec *storev1.TaskRecord, hist *taskdv1.Run) (resultTxn, error) {
	return scopeImpl(e.Ident.Scope).resultWrite(n, e, c, rec, hist)
}

// commitConflict handles a commit whose fence failed, from the Else
// responses; it returns true to commit again on c (updated), false when the
// run is settled (its flight ended, its events emitted), or an error
// wrapping ErrTooLarge when the result is too large to forward.
//
// IDENTITY: if the run's marker is gone (the identity's owner resolved it,
// and may run the fire time again) the run is DROPPED, unless an attempt
// whose reply was lost committed it; if the marker still stands and the
// identity is this incarnation's (under a newer epoch: it moved away and
// back, or the node rejoined) the result is committed under the current
// epoch; if it moved to another node, the result is forwarded to it
// (markers.go); a changed task (cancel, run-now) is folded in.
//
// EVERY_NODE: a deleted task, or a changed registration (the node lost its
// lease), drops the result (the marker stays and the next start resolves
// it); a changed shared record (cancel, run-now) is folded in.
func (n *Path) commitConflict(e *held.Entry, f *held.Flight, c *commitState, p startPlan, res runResult,
	r writepath.Refusal, ev Event, outcomeEvent EventType) (bool, error) {
	return scopeImpl(e.Ident.Scope).commitConflict(n, e, f, c, p, res, r, ev, outcomeEvent)
}

// droppedRun ends a run whose result is not committed: DROPPED, its
// flight ended with the record base (nil: leave it) at rev.
func (n *Path) droppedRun(f *held.Flight, ev Event, base *storev1.TaskRecord, rev int64) {
	ev.Type, ev.Outcome = EventDropped, taskdv1.Outcome_OUTCOME_DROPPED
	n.emit(ev)
	n.d.EndFlight(f, base, rev)
}

// outcomeEventOf is the event that reports an outcome.
func outcomeEventOf(o taskdv1.Outcome) EventType {
	switch o {
	case taskdv1.Outcome_OUTCOME_ERROR, taskdv1.Outcome_OUTCOME_CANCELED:
		return EventFailed
	case taskdv1.Outcome_OUTCOME_INTERRUPTED:
		return EventInterrupted
	case taskdv1.Outcome_OUTCOME_DROPPED:
		return EventDropped
	case taskdv1.Outcome_OUTCOME_VETOED:
		return "" // VETOED was emitted before the commit
	}
	return EventSucceeded
}

func (n *Path) emitResult(ev Event, outcome, next EventType, rec *storev1.TaskRecord) {
	if outcome != "" {
		ev.Type = outcome
		n.emit(ev)
	}
	ev.Type = next
	n.emitNext(ev, rec)
}

// emitNext emits ev (of type NEXT_SCHEDULED, RETRY_SCHEDULED or FINALIZED)
// with the time it names.
func (n *Path) emitNext(ev Event, rec *storev1.TaskRecord) {
	switch ev.Type {
	case EventRetryScheduled:
		ev.Next = rec.GetRetryAt().AsTime()
	case EventNextScheduled:
		if at, _, ok := record.Due(rec, 0, n.d.Timing(rec, time.Now())); ok {
			ev.Next = at
		}
	}
	ev.State = rec.GetState()
	n.emit(ev)
}

package taskservice

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/taskd/taskd/internal/runs"
)

// The run path (internal/runs) starts, calls and commits every run; what a
// handler sees and what its error asks for is this package's: it calls
// the handlers through handlerCalls and hears of each step through
// emitRun.

// runsConfigOf is what the run path is told of cfg.
func runsConfigOf(cfg Config, incarnation string, log hclog.Logger, emit func(runs.Event)) runs.Config {
	return runs.Config{Name: cfg.Name, Incarnation: incarnation, Client: cfg.Client,
		DefaultTimeout: cfg.DefaultTimeout, DrainTimeout: cfg.DrainTimeout, EtcdTimeout: cfg.EtcdTimeout,
		HandoffPeriod: cfg.HandoffPeriod, LeaseTTL: cfg.LeaseTTL, Retention: cfg.Retention,
		History: cfg.History, MaxOverlap: cfg.MaxOverlap, MaxPayload: cfg.MaxPayload, TracerProvider: cfg.TracerProvider,
		Local:  cfg.hasHandler,
		Remote: cfg.Remote != nil,
		Caller: handlerCalls{handlers: cfg.Handlers, vetoes: cfg.Vetoes, log: log},
		Emit:   emit,
	}
}

// handlerCalls calls the node's handlers (runs.Caller).
type handlerCalls struct {
	handlers map[string]Handler
	vetoes   []RunVeto
	log      hclog.Logger
}

// preparedRun is one run as its vetoes and handler see it.
type preparedRun struct {
	Run
	calls handlerCalls
}

func (h handlerCalls) Prepare(c runs.Call) runs.Prepared {
	return &preparedRun{calls: h, Run: Run{Identity: c.Identity, TaskID: c.TaskID, Kind: c.Kind,
		Payload: c.Payload, Data: c.Data, Labels: c.Labels, RunNumber: c.RunNumber, Attempt: c.Attempt,
		FireTime: c.FireTime, Fence: Fence(c.Fence), Node: c.Node, Manual: c.Manual, Recovery: c.Recovery,
		Durable: c.Durable}}
}

// Veto asks the vetoes in order; the first reason wins. A veto that panics
// is logged and does not veto.
func (p *preparedRun) Veto(ctx context.Context) (reason string) {
	for i, v := range p.calls.vetoes {
		func() {
			defer func() {
				if r := recover(); r != nil {
					p.calls.log.Error("run veto panicked; it does not veto", "veto", i, "task", p.TaskID, "panic", fmt.Sprint(r))
				}
			}()
			reason = v(ctx, &p.Run)
		}()
		if reason != "" {
			return reason
		}
	}
	return ""
}

// Work calls the kind's handler, or the remote worker reserved (a
// Reservation: every slot of remoteSlots is one).
func (p *preparedRun) Work(ctx context.Context, reserved any) (a runs.Answer) {
	run := &p.Run
	defer func() {
		if r := recover(); r != nil {
			a = answerOf(fmt.Errorf("handler panicked: %v", r), run)
		}
	}()
	if h := p.calls.handlers[run.Kind]; h != nil {
		return answerOf(h.Work(ctx, run), run)
	}
	res, ok := reserved.(Reservation)
	if !ok {
		return answerOf(fmt.Errorf("node %s: no worker of kind %q was reserved for the run", run.Node, run.Kind), run)
	}
	return answerOf(res.Work(ctx, run), run)
}

// answerOf is what err asks for, with what the handler left on run.
func answerOf(err error, run *Run) runs.Answer {
	a := runs.Answer{Err: err, Data: run.newData, DataSet: run.dataSet, Message: run.message, MessageSet: run.messageSet}
	oe, ok := asOutcome(err)
	if !ok {
		return a
	}
	a.Ask, a.Until, a.Text = askOf[oe.kind], oe.until, oe.Error()
	if oe.kind == outcomeCancel || oe.kind == outcomeWarning {
		a.Text = oe.msg // the handler's own words, not "task cancelled by its handler: …"
	}
	return a
}

// askOf is what each outcome error asks the run path for.
var askOf = [...]runs.Ask{outcomeRetry: runs.AskRetry, outcomePermanent: runs.AskPermanent, outcomeCancel: runs.AskCancel,
	outcomeSnooze: runs.AskSnooze, outcomeRunAgain: runs.AskRunAgain, outcomeWarning: runs.AskWarning}

// emitRun tells the listeners an event of the run path.
func (n *Node) emitRun(ev runs.Event) {
	n.emit(Event{Type: EventType(ev.Type), Time: ev.Time, Identity: ev.Identity, TaskID: ev.TaskID, Kind: ev.Kind,
		RunNumber: ev.RunNumber, Attempt: ev.Attempt, Fence: Fence(ev.Fence), Outcome: ev.Outcome, Message: ev.Message,
		Next: ev.Next, Count: ev.Count, FireTime: ev.FireTime, Ready: ev.Ready, State: ev.State, Duration: ev.Duration})
}

// emit tells every listener ev, in order; a listener that panics is
// logged and never stops the others or the run.
func (n *Node) emit(ev Event) {
	if len(n.cfg.Listeners) == 0 {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	ev.Node = n.cfg.Name
	for _, l := range n.cfg.Listeners {
		func() {
			defer func() {
				if r := recover(); r != nil {
					n.log.Error("event listener panicked", "event", string(ev.Type), "panic", fmt.Sprint(r))
				}
			}()
			l(ev)
		}()
	}
}

// TraceParent returns the W3C traceparent of the span ctx carries, or ""
// when ctx carries no valid span context (no tracing configured, or the
// caller was not traced). Handlers pass it on to what they call.
func TraceParent(ctx context.Context) string { return runs.TraceParent(ctx) }

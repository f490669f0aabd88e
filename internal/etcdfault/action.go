package etcdfault

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ActionKind says what an Action does to a call or a watch event.
type ActionKind int

const (
	// KindNone lets the call through unharmed.
	KindNone ActionKind = iota
	KindFail
	KindDelayBefore
	KindDelayUntil
	KindDelayAfter
	KindAmbiguous
	KindBlock
	KindDropEvents
	KindDelayEvents
	KindBreakWatch
)

// Action is what a Rule does to the calls it harms. Build it with Fail,
// DelayBefore, DelayAfter, Ambiguous, Block, DropEvents, DelayEvents or
// BreakWatch.
type Action struct {
	Kind  ActionKind
	Err   error           // for KindFail and KindAmbiguous; nil = the default error
	Delay time.Duration   // for the delay kinds
	Until <-chan struct{} // for KindDelayUntil
}

// appliedTimeout bounds a call that is sent on behalf of a caller whose
// context no longer governs it (DelayAfter, Ambiguous), so an injected fault
// can never hang a test.
const appliedTimeout = 10 * time.Second

// ErrInjected is the default error of Fail: like an unreachable etcd, the
// call was not applied.
var ErrInjected = status.Error(codes.Unavailable, "etcdfault: injected failure, the call was not sent")

// ErrAmbiguous is the default error of Ambiguous: it wraps
// context.DeadlineExceeded, as a timeout after the call was applied does.
var ErrAmbiguous = fmt.Errorf("etcdfault: reply withheld after the call was applied: %w", context.DeadlineExceeded)

// Fail makes a call return err (ErrInjected if nil) without reaching etcd.
func Fail(err error) Action { return Action{Kind: KindFail, Err: err} }

// DelayBefore makes a call wait d before it is sent. If the caller's context
// ends first, the call is not sent and the caller gets the context's error.
func DelayBefore(d time.Duration) Action { return Action{Kind: KindDelayBefore, Delay: d} }

// DelayUntil makes a call wait until release is closed before it is sent:
// a test holds a call exactly as long as it needs, without a timed delay. If
// the caller's context ends first, the call is not sent and the caller gets
// the context's error.
func DelayUntil(release <-chan struct{}) Action { return Action{Kind: KindDelayUntil, Until: release} }

// DelayAfter sends a call at once (so it is applied, whatever the caller's
// context does) and holds its reply d. If the caller's context ends first,
// the caller gets the context's error although the call was applied.
func DelayAfter(d time.Duration) Action { return Action{Kind: KindDelayAfter, Delay: d} }

// Ambiguous sends a call (so it is applied) and returns err (ErrAmbiguous if
// nil) instead of its reply, like a timeout after the call was applied.
func Ambiguous(err error) Action { return Action{Kind: KindAmbiguous, Err: err} }

// Block makes a call never reach etcd: it returns the context's error when
// the caller's context ends.
func Block() Action { return Action{Kind: KindBlock} }

// DropEvents swallows the watch events the rule matches: the watcher never
// sees them (a response left without events is not delivered at all).
func DropEvents() Action { return Action{Kind: KindDropEvents} }

// DelayEvents holds a watch response that carries a matching event for d
// before delivering it; later responses wait behind it, so order is kept.
func DelayEvents(d time.Duration) Action { return Action{Kind: KindDelayEvents, Delay: d} }

// BreakWatch ends a watch when a matching event arrives: instead of the
// event, the watcher gets a canceled response whose Err() is not nil, then
// the channel closes, so it must list again and watch anew.
func BreakWatch() Action { return Action{Kind: KindBreakWatch} }

func (a Action) isWatch() bool {
	return a.Kind == KindDropEvents || a.Kind == KindDelayEvents || a.Kind == KindBreakWatch
}

// perform runs send under action a. send must use the context it is given.
func perform[T any](ctx context.Context, a Action, send func(context.Context) (T, error)) (T, error) {
	var zero T
	switch a.Kind {
	case KindFail:
		if a.Err != nil {
			return zero, a.Err
		}
		return zero, ErrInjected
	case KindBlock:
		<-ctx.Done()
		return zero, ctx.Err()
	case KindDelayBefore:
		if err := wait(ctx, a.Delay); err != nil {
			return zero, err
		}
		return send(ctx)
	case KindDelayUntil:
		select {
		case <-a.Until:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
		return send(ctx)
	case KindDelayAfter:
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appliedTimeout)
		resp, err := send(actx)
		cancel()
		if werr := wait(ctx, a.Delay); werr != nil {
			return zero, werr
		}
		return resp, err
	case KindAmbiguous:
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appliedTimeout)
		_, _ = send(actx)
		cancel()
		if a.Err != nil {
			return zero, a.Err
		}
		return zero, ErrAmbiguous
	}
	return send(ctx)
}

// wait waits d, or until ctx ends (then it returns ctx's error).
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

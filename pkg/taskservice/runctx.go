package taskservice

import (
	"context"
	"time"

	"github.com/taskd/taskd/internal/held"
)

// The context helpers a handler reads its run's state through: the run's
// context carries its flight (held.WithFlight).

// IdentityLeft returns a channel that is closed when the identity of the run
// whose context is ctx moved to another node while the run was in flight
// (a planned move: MoveIdentity, draining, rebalancing). The run's context
// is not cancelled by such a move: the handler may finish, and its result is
// handed to the new owner, which commits it instead of running the fire time
// again. A handler that would rather stop may return early; its outcome then
// is what it returns. It returns nil for a context that is not a run's.
func IdentityLeft(ctx context.Context) <-chan struct{} {
	if f := held.FlightOf(ctx); f != nil {
		return f.Left
	}
	return nil
}

// LeaseDeadline returns the instant until which the node running the run
// whose context is ctx has proven its lease live (its last acknowledged
// renewal's send time plus two thirds of the TTL), as of now; ok is false
// for a context that is not a run's. A handler that starts its work in
// another process hands it this deadline, so that the work itself refuses
// to begin after it: a node paused between its last check and the work's
// start cannot otherwise be stopped (the exec handler does this).
func LeaseDeadline(ctx context.Context) (deadline time.Time, ok bool) {
	if d, ok := ctx.Value(leaseDeadlineKey{}).(time.Time); ok {
		return d, true
	}
	f := held.FlightOf(ctx)
	if f == nil {
		return time.Time{}, false
	}
	return f.Member.Deadline(), true
}

type leaseDeadlineKey struct{}

// ContextWithLeaseDeadline returns ctx carrying a lease deadline, as a run's
// context does: for tests of handlers outside a node.
func ContextWithLeaseDeadline(ctx context.Context, deadline time.Time) context.Context {
	return context.WithValue(ctx, leaseDeadlineKey{}, deadline)
}

// LeaseProven reports whether the node running the run whose context is
// ctx can still prove that its lease is live, and the run has not been
// cancelled: the node checks this immediately before it calls a handler,
// and a handler whose work starts later (after a fork, after connecting
// somewhere) checks it again at the last moment before that work begins,
// returning ErrLeaseNotProven if it is false. A paused node (SIGSTOP) can
// otherwise resume between the node's check and the handler's work, long
// after another node took the identity over. It is true for a context that
// is not a run's.
func LeaseProven(ctx context.Context) bool {
	if d, ok := ctx.Value(leaseDeadlineKey{}).(time.Time); ok {
		return time.Now().Before(d)
	}
	f := held.FlightOf(ctx)
	if f == nil {
		return true
	}
	return f.Ctx.Err() == nil && f.Member.Fresh()
}

package startstop

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Lifecycle is a node's one start/stop shape: the contexts its work runs
// under and the groups its Stop ends, in the order Stop ends them
// (pkg/taskservice's node.go):
// the loops, then the starters, then the runs (given until Stop's context
// ends, then cancelled), then the lease keeper, and last the detached
// goroutines that stopped the node from inside.
//
// Its lock (mu) guards started and stopped only; it is a leaf, taken under
// the node's engine lock (Drain) and never the other way.
type Lifecycle struct {
	// Ctx is cancelled when Stop begins: no loop, starter or etcd call of
	// the node's own outlives it, except the final writes of runs already
	// in flight (context.WithoutCancel(Ctx)).
	Ctx  context.Context
	stop context.CancelFunc
	// RunCtx is the parent of every run's context: cancelled, with the
	// reason as its cause, when the runs in flight must end (after Stop's
	// wait for them).
	RunCtx     context.Context
	cancelRuns context.CancelCauseFunc
	// Loops are the node's long-lived Loops (dispatch, watches...),
	// stopped by Stop before it waits for the runs.
	Loops *Group
	// Keeper renews the node's lease (membership's Run). Stop ends it
	// last, once the runs in flight have ended and their outcomes are
	// committed: a lease left to lapse while Stop waits for a long run
	// would let the placement leader hand the identities on (a second
	// execution) and would leave the final writes no registration to write
	// to.
	Keeper *Group
	// Detached are the goroutines that stop the node from inside (a drain
	// asked for through the control key, a node that was replaced): Stop
	// waits for the loops, so they cannot be loops. Stop cancels the group
	// when it is done, and Done waits for it.
	Detached *Group
	// Starters are the identities' starter goroutines (dispatch.go); runs
	// the handlers' goroutines and what they spawn (spawn).
	Starters sync.WaitGroup
	Runs     sync.WaitGroup

	mu        sync.Mutex
	started   bool
	stopped   bool
	startedAt time.Time
}

// NewLifecycle returns the lifecycle of a node not yet started. A loop
// still running slowStop after Stop began is named in the log.
func NewLifecycle(log hclog.Logger, slowStop time.Duration) *Lifecycle {
	l := &Lifecycle{}
	l.Ctx, l.stop = context.WithCancel(context.Background())
	l.Loops = New(l.Ctx, log, slowStop)
	l.Keeper = New(context.Background(), log, slowStop)
	l.Detached = New(context.Background(), log, 0)
	l.RunCtx, l.cancelRuns = context.WithCancelCause(context.Background())
	return l
}

// Begin marks the node started; false if it was started before.
func (l *Lifecycle) Begin() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return false
	}
	l.started, l.startedAt = true, time.Now()
	return true
}

// End marks the node stopped and cancels ctx; first is false if Stop
// began before, and started says whether the node was ever started.
func (l *Lifecycle) End() (first, started bool) {
	l.mu.Lock()
	first, started = !l.stopped, l.started
	l.stopped = true
	l.mu.Unlock()
	if first {
		l.stop()
	}
	return first, started
}

// Live reports whether the node was started and Stop has not begun.
func (l *Lifecycle) Live() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.started && !l.stopped
}

// Since is when the node was started (zero before).
func (l *Lifecycle) Since() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.startedAt
}

// WaitRuns waits for the runs in flight until ctx ends, then cancels them
// with cause and waits for them to return; either way the runs' context is
// cancelled when it returns.
func (l *Lifecycle) WaitRuns(ctx context.Context, cause error, onCancel func()) {
	done := make(chan struct{})
	go func() { l.Runs.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		onCancel()
		l.cancelRuns(cause)
		<-done
	}
	l.cancelRuns(cause)
}

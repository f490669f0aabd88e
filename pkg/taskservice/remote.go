package taskservice

import (
	"context"
	"time"

	"github.com/taskd/taskd/internal/backoff"
	"github.com/taskd/taskd/internal/dispatch"
	"github.com/taskd/taskd/internal/held"
)

// Remote runs the kinds served by processes outside the node: remote
// workers (pkg/workers). It serves every run of a kind that has no handler
// in Config.Handlers.
//
// A run of such a kind first waits, holding nothing, for a worker with a
// free slot (internal/dispatch/workerwait.go): the node asks Reserve for one before the run
// takes a run slot or writes its start, so a run no worker can take yet
// spends no slot, no attempt and no run number. When Reserve says no, the
// run waits on the node until Freed signals; the waiting runs of a kind are
// then offered the freed slots in the order they fell due.
//
// Kinds lists the kinds it serves now, which the node advertises in its
// registration; KindsChanged signals (without blocking, coalesced) each
// time that list may have changed.
type Remote interface {
	// Reserve takes one free slot of a connected worker of kind for a run
	// about to start; false if none is free. The node calls exactly one of
	// the reservation's Work or Release, once.
	Reserve(kind string) (Reservation, bool)
	// Freed signals (without blocking, coalesced) each time a Reserve that
	// failed may succeed now: a slot freed, a worker joined.
	Freed() <-chan struct{}
	Kinds() []string
	KindsChanged() <-chan struct{}
}

// MaxRemoteKinds is the most distinct kinds a node advertises for its
// Remote: pkg/workers refuses a worker whose kinds would take the node past
// it, and Kinds keeps only the first MaxRemoteKinds (sorted) of a Remote
// that reports more. The node's registration (its kinds with the rest of
// its record, one etcd Put under its lease) then stays below about 132 KiB
// plus its own handlers' kinds and its declared ones (at most
// MaxWorkerKinds): each kind costs at most MaxKindLen + 3 bytes, and etcd
// refuses a request over 1.5 MiB (--max-request-bytes), which would
// leave a node that lost its lease unable to register again.
const MaxRemoteKinds = 1024

// Reservation is a worker's slot held for one run (Remote.Reserve).
type Reservation interface {
	// Work runs the run on the reserved worker (or, if that worker has
	// gone, on another of the kind with a free slot), under the same
	// fence, lease check and timeout as a local handler's call, and
	// returns the outcome the same way.
	Work(ctx context.Context, run *Run) error
	// Live reports whether the reserved worker is still connected: the
	// node looks right before it writes the run's start, and puts the run
	// back instead of starting it for a worker that went away.
	Live() bool
	// Release gives the slot back unused.
	Release()
}

// remoteSlots is Config.Remote as the dispatcher asks for it
// (dispatch.Remote): its Reservations are the held.Slots of the runs that
// wait for a worker, which the run's call takes back as one
// (TakeReservation).
type remoteSlots struct{ r Remote }

func (s remoteSlots) Reserve(kind string) (held.Slot, bool) {
	res, ok := s.r.Reserve(kind)
	if !ok {
		return nil, false
	}
	return res, true
}

func (s remoteSlots) Kinds() []string        { return s.r.Kinds() }
func (s remoteSlots) Freed() <-chan struct{} { return s.r.Freed() }

// dispatchConfigOf is what the dispatcher reads of cfg.
func dispatchConfigOf(cfg Config) dispatch.Config {
	d := dispatch.Config{Name: cfg.Name, Workers: cfg.Workers, MaxCatchUp: cfg.MaxCatchUp,
		LeaseTTL: cfg.LeaseTTL, EtcdTimeout: cfg.EtcdTimeout, LookAhead: cfg.LookAhead, ColdAfter: cfg.ColdAfter,
		MisfireThreshold: cfg.MisfireThreshold, Retention: cfg.Retention,
		KindLimits: cfg.KindLimits, DeclaredKinds: cfg.DeclaredKinds,
		HasHandler: cfg.hasHandler}
	if cfg.Remote != nil {
		d.Remote = remoteSlots{cfg.Remote}
	}
	return d
}

// remoteKindsLoop republishes the node's registration whenever the remote
// workers' kinds change, so that scheduling anywhere in the cluster knows
// them (and refuses a kind that nothing serves).
func (n *Node) remoteKindsLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.cfg.Remote.KindsChanged():
		}
		// A worker that came or went may begin or end an episode of a
		// kind nothing serves here (internal/dispatch/unserved.go).
		n.d.Lock()
		n.d.CheckUnservedLocked()
		n.d.Unlock()
		b := backoff.New(50*time.Millisecond, n.cfg.LeaseTTL/4)
		for attempt := 1; ; attempt++ {
			err := n.member.Publish(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			if attempt == 5 || !b.Wait(ctx) {
				// A registration rewritten later (the next change, or a
				// new registration after a lost lease) carries the kinds.
				n.log.Warn("could not advertise the remote workers' kinds", "kinds", len(n.Kinds()), "error", err)
				break
			}
		}
		n.api.ForgetKinds() // this node's own view of the cluster's kinds too
	}
}

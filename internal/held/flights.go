package held

import (
	"context"
	"iter"

	"github.com/taskd/taskd/internal/membership"
)

// Flights is a node's one registry of its runs in flight, keyed by task.
//
// Guarantee: while a run of a task is in flight on the node (from its start
// write until its result is settled: committed, forwarded to the identity's
// new owner, or dropped), Begin refuses a second run of that task, so no
// second run starts on the node and the node never takes its own live run
// marker for a stale one. The registry does not depend on which identities
// the node owns at the moment: an identity can leave and come back (a move
// and a move back, a lost lease and a rejoin) while its run goes on, and
// the returning identity's task waits for that run instead of starting
// again. End removes a run only if it is still the registered one.
//
// The zero Flights is not ready: use NewFlights. Guarded by the engine lock.
type Flights struct {
	m map[Ref]*Flight
}

// NewFlights returns an empty registry.
func NewFlights() Flights { return Flights{m: map[Ref]*Flight{}} }

// Begin registers a run of ref and returns it, or false if a run of ref is
// in flight already. The run's context is derived from parent, carries the
// run (FlightOf finds it: a handler reads its run's state through it) and
// is cancellable with a cause; member is the node's membership, which the
// handler's lease checks read.
func (r *Flights) Begin(ref Ref, parent context.Context, member *membership.Member) (*Flight, bool) {
	if _, busy := r.m[ref]; busy {
		return nil, false
	}
	f := &Flight{Ref: ref, Member: member, Left: make(chan struct{})}
	f.Ctx, f.Cancel = context.WithCancelCause(context.WithValue(parent, flightKey{}, f))
	r.m[ref] = f
	return f, true
}

type flightKey struct{}

// FlightOf is the run whose context is ctx, or nil for a context that is
// not a run's.
func FlightOf(ctx context.Context) *Flight {
	f, _ := ctx.Value(flightKey{}).(*Flight)
	return f
}

// Of is the run of ref in flight, or nil.
func (r *Flights) Of(ref Ref) *Flight { return r.m[ref] }

// End takes f out of the registry if it is still the run of its task
// there, and reports whether it was.
func (r *Flights) End(f *Flight) bool {
	if r.m[f.Ref] != f {
		return false
	}
	delete(r.m, f.Ref)
	return true
}

// Len is the number of runs in flight.
func (r *Flights) Len() int { return len(r.m) }

// Owned ranges over the runs in flight of identities owned here (IDENTITY
// scope), of identity id only unless id is "". The caller may End runs
// while ranging.
func (r *Flights) Owned(id string) iter.Seq[*Flight] {
	return func(yield func(*Flight) bool) {
		for ref, f := range r.m {
			if ref.Owned() && (id == "" || ref.Identity == id) && !yield(f) {
				return
			}
		}
	}
}

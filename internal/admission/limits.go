package admission

import "slices"

// Limits are the per-kind concurrency limits of a node (Config.KindLimits).
//
// A limited kind has a number of tokens. A due entry of that kind takes one
// (Take) when its identity's starter takes it off the start queue, before
// it waits for a worker slot and before its start write; the token is held
// until the run ends (its commit included), or given back at once by a
// start that runs nothing (Release). An entry that finds no token free does
// not hold its starter, a worker slot or its identity's other kinds: it
// waits in its kind's wait list, apart from the start queue, still due.
//
// The wait list keeps one queue per identity, in start order, and hands a
// freed token to the identities with waiting runs in turn (round robin,
// Grant): an identity with a large backlog of one kind does not delay the
// other identities' runs of that kind by more than one run each. Runs of
// one kind of one identity start in order: while one waits, every later one
// of that kind and identity waits behind it.
//
// The zero Limits has no limited kind. Read-only map once made; the Limit
// values in it are guarded by the engine lock.
type Limits[E any, I comparable] struct {
	kinds map[string]*Limit[E, I]
}

// NewLimits returns the limits of the kinds in limits (kind -> tokens).
func NewLimits[E any, I comparable](limits map[string]int) Limits[E, I] {
	if len(limits) == 0 {
		return Limits[E, I]{}
	}
	out := make(map[string]*Limit[E, I], len(limits))
	for kind, n := range limits {
		out[kind] = &Limit[E, I]{kind: kind, limit: n, waiting: map[I][]E{}}
	}
	return Limits[E, I]{kinds: out}
}

// Any reports whether some kind is limited.
func (l Limits[E, I]) Any() bool { return len(l.kinds) > 0 }

// Of is the limit of kind, or nil if it has none.
func (l Limits[E, I]) Of(kind string) *Limit[E, I] {
	if len(l.kinds) == 0 {
		return nil
	}
	return l.kinds[kind]
}

// Forget takes a lost identity's entries out of every kind's wait list
// (they hold no token).
func (l Limits[E, I]) Forget(id I) {
	for _, lim := range l.kinds {
		lim.forget(id)
	}
}

// Waiting counts the entries waiting for a token, by limited kind; nil if
// no kind is limited.
func (l Limits[E, I]) Waiting() map[string]int {
	if len(l.kinds) == 0 {
		return nil
	}
	out := make(map[string]int, len(l.kinds))
	for kind, lim := range l.kinds {
		out[kind] = lim.nwait
	}
	return out
}

// Limit is the limit of one kind. A *Limit is also the token an admitted
// entry holds, given back with Release.
type Limit[E any, I comparable] struct {
	kind  string
	limit int
	// running counts the tokens taken: runs from their admission to their
	// end (or to a start that ran nothing).
	running int
	// waiting holds, per identity, the entries waiting for a token in start
	// order; ring lists the identities that have some, served in turn from
	// next; nwait counts them all.
	waiting map[I][]E
	ring    []I
	next    int
	nwait   int
}

// Kind is the limited kind.
func (lim *Limit[E, I]) Kind() string { return lim.kind }

// Take takes a token for e, of identity id, if one is free and no earlier
// entry of the kind and identity waits, and reports true: e then holds it
// (the caller keeps lim as e's token). Otherwise e joins the identity's
// wait list, behind the earlier ones, and false is returned: Grant hands
// it a token later.
func (lim *Limit[E, I]) Take(id I, e E) bool {
	q := lim.waiting[id]
	if len(q) == 0 && lim.running < lim.limit {
		lim.running++
		return true
	}
	if len(q) == 0 {
		lim.ring = append(lim.ring, id)
	}
	lim.waiting[id] = append(q, e)
	lim.nwait++
	return false
}

// Release gives back a token taken by Take or handed out by Grant: the run
// ended, or its start ran nothing. The caller then calls Grant to hand it
// on.
func (lim *Limit[E, I]) Release() { lim.running-- }

// Grant hands the free tokens to the waiting entries, one identity after
// another, each identity's in the order they waited: give is called with
// each entry given one (which then holds lim as its token), out of the
// wait list already.
func (lim *Limit[E, I]) Grant(give func(id I, e E)) {
	var zero E
	for lim.running < lim.limit && len(lim.ring) > 0 {
		if lim.next >= len(lim.ring) {
			lim.next = 0
		}
		id := lim.ring[lim.next]
		q := lim.waiting[id]
		e := q[0]
		q[0] = zero
		q = q[1:]
		lim.nwait--
		if len(q) == 0 {
			delete(lim.waiting, id)
			lim.ring = slices.Delete(lim.ring, lim.next, lim.next+1)
		} else {
			lim.waiting[id] = q
			lim.next++
		}
		lim.running++
		give(id, e)
	}
}

// Running counts the tokens held.
func (lim *Limit[E, I]) Running() int { return lim.running }

// Waiting counts the entries waiting for a token.
func (lim *Limit[E, I]) Waiting() int { return lim.nwait }

func (lim *Limit[E, I]) forget(id I) {
	q, ok := lim.waiting[id]
	if !ok {
		return
	}
	lim.nwait -= len(q)
	delete(lim.waiting, id)
	i := slices.Index(lim.ring, id)
	lim.ring = slices.Delete(lim.ring, i, i+1)
	if lim.next > i {
		lim.next--
	}
}

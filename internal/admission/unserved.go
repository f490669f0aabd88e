package admission

import (
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
)

// This file says when runs wait for a kind that nothing on the node
// serves: no handler of its own and no connected remote worker of the
// kind (a node restarted without a handler it had, a kind declared by
// Config.DeclaredKinds before its first worker, a worker that went away).
// Such runs wait in their kind's worker queue, holding nothing, as runs
// waiting for a busy worker do; what this file adds is that the node says
// so.
//
// An episode of a kind begins when a run of it waits and no connected
// worker serves it, and ends when one connects or no run of it waits here
// any more (it ran, was cancelled or paused, or its identity moved). Each
// episode is logged once as it begins (WARN, or INFO for a declared kind,
// whose runs are expected to wait for their first worker) and once as it
// ends: a node logs nothing per run and nothing again while it lasts,
// however many runs wait or however long. While it lasts, Unserved counts
// its runs (Stats.WaitingUnserved), and Reason names the kind and the
// node (GetTask's waiting_reason).
//
// Episodes are checked where the answer can change: when a run of a kind
// joins its kind's empty queue (Admit), when the workers' kinds change
// (Check: a worker connected or went away), when worker slots are handed
// out (Grant: a joining worker frees slots), and when a waiting run leaves
// its queue without a worker (Drop).

// episode is one kind's episode.
type episode struct {
	since    time.Time
	declared bool // named in Config.DeclaredKinds
}

// Reason says, for a run that has waited for a worker of kind since since,
// what it waits for, as GetTask's waiting_reason.
func (w *Workers[E, R]) Reason(kind string, since time.Time) string {
	at := since.UTC().Format(time.RFC3339)
	switch u := w.unserved[kind]; {
	case u != nil && u.declared:
		return fmt.Sprintf("no worker of kind %q (declared by --kinds) has connected to node %s; waiting since %s", kind, w.node, at)
	case u != nil:
		return fmt.Sprintf("no handler or connected worker for kind %q on node %s; waiting since %s", kind, w.node, at)
	}
	return fmt.Sprintf("every connected worker of kind %q on node %s is busy; waiting since %s", kind, w.node, at)
}

// Check begins the episodes of kinds whose runs wait and that no connected
// worker serves, and ends those of kinds a worker now serves or of which
// no run waits: the workers' kinds changed.
func (w *Workers[E, R]) Check(log hclog.Logger) {
	if len(w.qs) == 0 && len(w.unserved) == 0 {
		return
	}
	kinds := w.remoteKinds()
	for kind, wq := range w.qs {
		if _, served := slices.BinarySearch(kinds, kind); !served && wq.Len() > 0 && w.unserved[kind] == nil {
			w.begin(kind, log)
		}
	}
	w.endServed(kinds, log)
}

// Unserved counts the runs waiting in an episode, by kind, with 0 for a
// declared kind that has none; nil if there is neither.
func (w *Workers[E, R]) Unserved() map[string]int {
	if len(w.unserved) == 0 && len(w.declared) == 0 {
		return nil
	}
	out := make(map[string]int, len(w.unserved)+len(w.declared))
	for kind := range w.declared {
		out[kind] = 0
	}
	for kind := range w.unserved {
		if wq := w.qs[kind]; wq != nil {
			out[kind] = wq.Len()
		}
	}
	return out
}

// remoteKinds is the sorted list of kinds the connected workers serve now.
func (w *Workers[E, R]) remoteKinds() []string {
	kinds := w.remote.Kinds()
	if !slices.IsSorted(kinds) {
		kinds = slices.Clone(kinds)
		slices.Sort(kinds)
	}
	return kinds
}

// noteWait begins kind's episode if none is going on and no connected
// worker serves kind: a run of it just joined its empty worker queue.
func (w *Workers[E, R]) noteWait(kind string, log hclog.Logger) {
	if w.unserved[kind] != nil {
		return
	}
	if _, served := slices.BinarySearch(w.remoteKinds(), kind); !served {
		w.begin(kind, log)
	}
}

// endServed ends the episodes of kinds that the connected workers (kinds,
// sorted; nil to read them) serve now or of which no run waits.
func (w *Workers[E, R]) endServed(kinds []string, log hclog.Logger) {
	if len(w.unserved) == 0 {
		return
	}
	if kinds == nil {
		kinds = w.remoteKinds()
	}
	for kind := range w.unserved {
		if _, served := slices.BinarySearch(kinds, kind); served {
			w.end(kind, "a worker of the kind connected", log)
		} else if w.queued(kind) == 0 {
			w.end(kind, "no run of the kind waits here any more", log)
		}
	}
}

// endIfIdle ends kind's episode if no run of it waits any more: a waiting
// run left its queue without a worker (cancelled, paused, its identity
// gone).
func (w *Workers[E, R]) endIfIdle(kind string, log hclog.Logger) {
	if w.unserved[kind] != nil && w.queued(kind) == 0 {
		w.end(kind, "no run of the kind waits here any more", log)
	}
}

func (w *Workers[E, R]) begin(kind string, log hclog.Logger) {
	u := &episode{since: time.Now(), declared: w.declared[kind]}
	w.unserved[kind] = u
	runs := w.queued(kind)
	if u.declared {
		log.Info("runs of a declared kind wait for its first worker: no worker of the kind is connected to this node",
			"kind", kind, "runs", runs)
		return
	}
	log.Warn("runs of a kind wait: no handler and no connected worker serves the kind on this node; "+
		"they use no attempt and wait until a worker of the kind connects (or a handler is configured)",
		"kind", kind, "runs", runs)
}

func (w *Workers[E, R]) end(kind, why string, log hclog.Logger) {
	u := w.unserved[kind]
	delete(w.unserved, kind)
	log.Info("runs of the kind no longer wait for want of a worker", "kind", kind, "reason", why,
		"waited", time.Since(u.since).Round(time.Millisecond))
}

package taskservice

import (
	"fmt"
	"slices"
	"time"
)

// This file says when runs wait for a kind that nothing on this node
// serves: no handler of its own and no connected remote worker of the
// kind (a node restarted without a handler it had, a kind declared by
// Config.DeclaredKinds before its first worker, a worker that went away).
// Such runs wait in their kind's worker queue (workerwait.go), holding
// nothing, as runs waiting for a busy worker do; what this file adds is
// that the node says so.
//
// An episode of a kind begins when a run of it waits and no connected
// worker serves it, and ends when one connects or no run of it waits here
// any more (it ran, was cancelled or paused, or its identity moved). Each episode
// is logged once as it begins (WARN, or INFO for a declared kind, whose
// runs are expected to wait for their first worker) and once as it ends:
// a node logs nothing per run and nothing again while it lasts, however
// many runs wait or however long. While it lasts, Stats.WaitingUnserved
// counts its runs, and GetTask on the owner gives each of its tasks a
// waiting_reason naming the kind and the node.
//
// Episodes are checked where the answer can change: when a run of a kind
// joins its kind's empty queue (admitWorkerLocked), when the workers'
// kinds change (remoteKindsLoop: a worker connected or went away), when
// worker slots are handed out (a joining worker frees slots), and when a
// waiting run leaves its queue without a worker (dropWorkerWaitLocked).

// unservedKind is one kind's episode.
type unservedKind struct {
	since    time.Time
	declared bool // named in Config.DeclaredKinds
}

// waitingReasonLocked says, for a task whose due run has waited for a
// worker of kind since since, what it waits for, as GetTask's
// waiting_reason. n.mu held.
func (n *Node) waitingReasonLocked(kind string, since time.Time) string {
	at := since.UTC().Format(time.RFC3339)
	switch u := n.admit.unserved[kind]; {
	case u != nil && u.declared:
		return fmt.Sprintf("no worker of kind %q (declared by --kinds) has connected to node %s; waiting since %s", kind, n.cfg.Name, at)
	case u != nil:
		return fmt.Sprintf("no handler or connected worker for kind %q on node %s; waiting since %s", kind, n.cfg.Name, at)
	}
	return fmt.Sprintf("every connected worker of kind %q on node %s is busy; waiting since %s", kind, n.cfg.Name, at)
}

// remoteKindsLocked is the sorted list of kinds the connected workers
// serve now. n.mu held (the Remote's own lock is taken under it, as
// Reserve's is).
func (n *Node) remoteKindsLocked() []string {
	kinds := n.cfg.Remote.Kinds()
	if !slices.IsSorted(kinds) {
		kinds = slices.Clone(kinds)
		slices.Sort(kinds)
	}
	return kinds
}

// noteWaitLocked begins kind's episode if none is going on and no
// connected worker serves kind: a run of it just joined its empty worker
// queue. n.mu held.
func (n *Node) noteWaitLocked(kind string) {
	if n.admit.unserved[kind] != nil {
		return
	}
	if _, served := slices.BinarySearch(n.remoteKindsLocked(), kind); !served {
		n.beginUnservedLocked(kind)
	}
}

// checkUnservedLocked begins the episodes of kinds whose runs wait and
// that no connected worker serves, and ends those of kinds a worker now
// serves or of which no run waits: the workers' kinds changed. n.mu held.
func (n *Node) checkUnservedLocked() {
	if len(n.admit.workerQs) == 0 && len(n.admit.unserved) == 0 {
		return
	}
	kinds := n.remoteKindsLocked()
	for kind, wq := range n.admit.workerQs {
		if _, served := slices.BinarySearch(kinds, kind); !served && wq.Len() > 0 && n.admit.unserved[kind] == nil {
			n.beginUnservedLocked(kind)
		}
	}
	n.endServedLocked(kinds)
}

// endServedLocked ends the episodes of kinds that the connected workers
// (kinds, sorted; nil to read them) serve now or of which no run waits.
// n.mu held.
func (n *Node) endServedLocked(kinds []string) {
	if len(n.admit.unserved) == 0 {
		return
	}
	if kinds == nil {
		kinds = n.remoteKindsLocked()
	}
	for kind := range n.admit.unserved {
		if _, served := slices.BinarySearch(kinds, kind); served {
			n.endUnservedLocked(kind, "a worker of the kind connected")
		} else if wq := n.admit.workerQs[kind]; wq == nil || wq.Len() == 0 {
			n.endUnservedLocked(kind, "no run of the kind waits here any more")
		}
	}
}

// endIfIdleLocked ends kind's episode if no run of it waits any more: a
// waiting run left its queue without a worker (cancelled, paused, its
// identity gone). n.mu held.
func (n *Node) endIfIdleLocked(kind string) {
	if n.admit.unserved[kind] == nil {
		return
	}
	if wq := n.admit.workerQs[kind]; wq == nil || wq.Len() == 0 {
		n.endUnservedLocked(kind, "no run of the kind waits here any more")
	}
}

func (n *Node) beginUnservedLocked(kind string) {
	u := &unservedKind{since: time.Now(), declared: n.admit.declared[kind]}
	n.admit.unserved[kind] = u
	runs := 0
	if wq := n.admit.workerQs[kind]; wq != nil {
		runs = wq.Len()
	}
	if u.declared {
		n.log.Info("runs of a declared kind wait for its first worker: no worker of the kind is connected to this node",
			"kind", kind, "runs", runs)
		return
	}
	n.log.Warn("runs of a kind wait: no handler and no connected worker serves the kind on this node; "+
		"they use no attempt and wait until a worker of the kind connects (or a handler is configured)",
		"kind", kind, "runs", runs)
}

func (n *Node) endUnservedLocked(kind, why string) {
	u := n.admit.unserved[kind]
	delete(n.admit.unserved, kind)
	n.log.Info("runs of the kind no longer wait for want of a worker", "kind", kind, "reason", why,
		"waited", time.Since(u.since).Round(time.Millisecond))
}

// waitingUnservedLocked counts the runs waiting in an episode, by kind,
// with 0 for a declared kind that has none. n.mu held.
func (n *Node) waitingUnservedLocked() map[string]int {
	if len(n.admit.unserved) == 0 && len(n.admit.declared) == 0 {
		return nil
	}
	out := make(map[string]int, len(n.admit.unserved)+len(n.admit.declared))
	for kind := range n.admit.declared {
		out[kind] = 0
	}
	for kind := range n.admit.unserved {
		if wq := n.admit.workerQs[kind]; wq != nil {
			out[kind] = wq.Len()
		}
	}
	return out
}

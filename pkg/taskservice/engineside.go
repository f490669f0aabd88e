package taskservice

import (
	"slices"
	"time"

	"github.com/taskd/taskd/internal/dispatch"
	"github.com/taskd/taskd/internal/taskapi"
	"github.com/taskd/taskd/pkg/identity"
)

// engineSide is the node as the requests (internal/taskapi) see it
// (taskapi.Engine): the changes to its entries a request that stored or
// removed a task makes, which are the dispatcher's (internal/dispatch's
// requests.go), and what only the node knows: its kinds, its repairs, its
// listeners.
type engineSide struct {
	*dispatch.Dispatcher
	n *Node
}

var _ taskapi.Engine = engineSide{}

func (s engineSide) node() *Node { return s.n }

// Repair reads identity id again after a while (0: at once).
func (s engineSide) Repair(id string, after time.Duration) { s.node().own.RepairAfter(id, after) }

// IdentityMoved reacts to a failed fence of a request's write.
func (s engineSide) IdentityMoved(id string, cur identity.Owner) {
	n := s.node()
	n.d.Lock()
	st := n.d.Idents[id]
	n.d.Unlock()
	if st != nil {
		n.d.IdentityMoved(st, cur)
	}
}

// EveryDeleted drops a deleted EVERY_NODE task and this node's progress
// on it.
func (s engineSide) EveryDeleted(id, taskID string) { s.node().runs.RemoveEvery(id, taskID) }

// Kinds are the kinds this node handles.
func (s engineSide) Kinds() []string { return s.node().Kinds() }

// ServesKind reports whether this node runs kind now: by a handler of its
// own or a connected remote worker, or will when one connects (a declared
// kind). It is asked beside the cluster's kinds, whose cache may be older
// than a worker that just connected.
func (s engineSide) ServesKind(kind string) bool {
	n := s.node()
	return n.cfg.Handlers[kind] != nil || n.d.Declared(kind) ||
		n.cfg.Remote != nil && slices.Contains(n.cfg.Remote.Kinds(), kind)
}

// HandlesKind reports whether a handler of this node's own runs kind.
func (s engineSide) HandlesKind(kind string) bool { return s.node().cfg.Handlers[kind] != nil }

// Announce emits the event of a change a request made.
func (s engineSide) Announce(c taskapi.Change, id, taskID, kind string) {
	s.node().emit(Event{Type: changeEvents[c], Identity: id, TaskID: taskID, Kind: kind})
}

// changeEvents are the events of the changes a request makes.
var changeEvents = map[taskapi.Change]EventType{
	taskapi.Canceled: EventCanceled,
	taskapi.Paused:   EventPaused,
	taskapi.Resumed:  EventResumed,
	taskapi.Updated:  EventUpdated,
}

// Package follow keeps this node's copy of the keys every node of the
// cluster follows rather than owns: its one job is to know what is in force
// cluster-wide, as etcd holds it, and to tell the node when that changes. A
// follower lists its keys (Load), then follows them on the one
// list-then-watch loop of internal/etcdwatch (Run), listing again after any
// break of the watch; what the node writes itself it can tell the follower
// at once (Learn, Forget), before the watch brings it.
//
//   - Pauses: the identity and kind pauses in force (contract §4.6); the
//     node asks which of them hold back a task (By), and is told when one
//     began or was lifted (OnPause), so that it parks or puts back its
//     entries.
//   - Calendars: the stored calendars, compiled (contract §4.2); the node
//     asks for the exclusions of a task's calendars (Exclusions) and whether
//     a calendar is stored (Stored).
//
// The writes of these keys are built by internal/writepath and sent by the
// node; a follower only reads.
//
// Guarantee: etcdwatch's — after any break, the keys are listed again
// before the watch resumes, so a change is never missed, only seen late. The
// copy may lag etcd; nothing that must hold depends on it being current:
// every start compares the pause keys absent in etcd itself, and a
// schedule compares its calendars exist.
//
// Lock: each follower has its own mutex, guarding its copy (and the
// revision it last listed at), nothing else; Calendars has a second one,
// taken before it, that orders the changes of its copy. They are leaves:
// the node may call a follower's queries while holding its own lock (n.mu),
// and a follower never calls the node while holding either. The node is
// called back (OnPause) without them, from the goroutine that learned the
// change (Run's, or the caller of Load, Learn or LearnRefusal), so those
// are never called with n.mu held.
package follow

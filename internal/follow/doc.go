// Package follow follows the keys a node reads rather than owns: its one
// job is to know what is in force cluster-wide (and what other nodes ask of
// this one), as etcd holds it, and to tell the node when that changes. A
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
//   - EveryNode: the EVERY_NODE tasks (contract §6), each read with this
//     node's progress on it by a list (Load, Reload); it keeps no copy but
//     hands each task to the node decoded (Put, Deleted, Listed), whose
//     entries hold them.
//   - Control: this node's control area, the drain and rebalancing
//     requests other nodes write for it (contract §3.1); it keeps nothing,
//     and hands each request to the node (OnControl), which acts on it and
//     deletes it.
//
// Watch.Follow is the loop they run on, and the one of the node's other
// watches (its ownership index, the registrations) and of the stored
// tokens' follower (pkg/tokens), which stays with the tokens' types.
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
// Lock: Pauses and Calendars each have their own mutex, guarding the copy
// (and the revision it last listed at), nothing else; Calendars has a
// second one, taken before it, that orders the changes of its copy. They
// are leaves: the node may call a follower's queries while holding its own
// lock (the engine lock, internal/dispatch), and a follower never calls the node while holding either.
// EveryNode keeps only the revision of its last list (atomic), Control
// nothing: they have no lock. The node is called back (OnPause,
// OnEveryNode, OnControl) with no follower's lock held, from the goroutine
// that learned the change (Run's, or the caller of Load, Reload, Learn or
// LearnRefusal), so those are never called with the engine lock held.
package follow

// Package held is the model of what a node holds: the identities it runs
// tasks for (Ident) and their task entries (Entry, kept by id in a
// TaskSet and ordered by due time in the Queue), and its runs in flight
// (Flight, keyed by Ref; Armed while a run waits for its fire time). It is
// data and the few rules that read only it (when an entry may go cold,
// when an identity is quiet); what the node does with it is
// internal/dispatch's and pkg/taskservice's.
//
// The model is sized for memory: a node holds an Entry per pending task of
// its identities, so a waiting entry keeps its record encoded (Freeze) or
// not at all (Cold), its rarely used fields out of line (Extra), its times
// as 8-byte Instants, and an identity keeps its tasks in an open-addressed
// TaskSet instead of a map (docs/performance.md, "Heap per pending task").
//
// Lock: none of its own. Every value here is guarded by the node's engine
// lock (internal/dispatch's Dispatcher.mu), which the caller holds.
package held

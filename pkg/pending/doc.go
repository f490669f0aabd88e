// Package pending owns the persisted pending-task model: the record
// encoding, task ids, and the reads of tasks, their run history and
// idempotency keys (Store). The keys are internal/keyspace's:
//
//	task/<identity>/<task-id>            -> storev1.TaskRecord
//	runs/<identity>/<task-id>/<seq>      -> storev1.RunRecord (last --history)
//	idem/<identity>/<key>                -> task id
//
// The writes a commit puts into a fenced Txn are internal/writepath's.
//
// Guarantee: a task's mod revision changes on every write of its record, so
// writepath's TaskAt(identity, id, rev) in a Txn makes a commit fail if
// anyone (a cancel, a RunTaskNow, another node) wrote the task since the
// caller read it.
//
// Lock: an IDSource's mutex guards its last id only; a Store holds no
// state.
package pending

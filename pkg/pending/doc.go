// Package pending owns the persisted pending-task model: the etcd keyspace of
// tasks, their run history and idempotency keys, the record encoding, and the
// operations a commit puts into a fenced Txn.
//
// Keyspace, under the cluster prefix (identities escaped by identity.Encode,
// so no identity's keys can fall under another's prefix):
//
//	task/<identity>/<task-id>            -> storev1.TaskRecord
//	runs/<identity>/<task-id>/<seq>      -> storev1.RunRecord (last --history)
//	idem/<identity>/<key>                -> task id
//
// Guarantee: a task's mod revision changes on every write of its record, so
// TaskAt(identity, id, rev) in a Txn makes a commit fail if anyone (a cancel,
// a RunTaskNow, another node) wrote the task since the caller read it.
package pending

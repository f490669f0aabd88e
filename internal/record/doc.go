// Package record is the task record's state machine: from a stored task
// record and the clock's reading to the next record. It plans a due
// record's start (which fire time runs, or misfires, and with which run
// number and attempt), folds a finished run's result into the record
// (retry, recovery, snooze, the end of the task), undoes an armed start
// whose handler was never called, and says when a record is next due.
//
// It has no etcd, no locks and no clock of its own: every function reads
// only its arguments (the time is Timing.Now, or the end of the run a
// Result describes; the backoff's jitter is an argument too) and changes
// only the record it is handed (PlanStart works on a copy). The same
// inputs therefore always give the same next record, which the node
// (pkg/taskservice) commits in one fenced Txn.
//
// The guarantees its tests hold it to, on a fake clock: a start is planned
// only for a due record and with a run number above every earlier one (a
// recovery keeps its run's number); a record leaves ApplyResult without a
// run marker and never RUNNING; a once task whose run succeeds ends
// COMPLETED; a retryable failure with attempts left is retried strictly
// after the run's end and at most the task's maximum backoff later (or at
// the later time its handler asked for); one with no attempts left, or a
// failure that ends a task, ends DEAD, never COMPLETED (contract §5.2); and
// the time a record is next due never goes back while nothing runs.
package record

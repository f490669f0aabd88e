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
// only the record it is handed (PlanStart and UndoStart work on a copy).
// The same inputs therefore always give the same next record, which the
// node (pkg/taskservice) commits in one fenced Txn.
//
// What it guarantees, as its property tests check on a fake clock
// (property_test.go): PlanStart, called once Due says the record is due,
// starts the run at the clock's reading, for a fire time that has come,
// with a run number above every earlier one (a recovery runs its
// interrupted run's number again); after ApplyResult the record holds no
// run marker and is never RUNNING; a once task whose run succeeds ends
// COMPLETED; a retryable failure with attempts left is retried strictly
// after the run's end and at most the task's longest backoff later (or at
// the later time its handler asked for); one with no attempts left ends
// DEAD, and a task reads COMPLETED only after a run that did not fail,
// DEAD only after one that did (contract §5.2); a record with no run in
// flight stays as it is when settled again, and its due time never goes
// back as the clock moves on; an undone start leaves no trace.
package record

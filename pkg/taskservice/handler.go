package taskservice

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Handler runs the tasks of one kind. Work is called once per run; its
// returned error decides the outcome:
//
//   - nil: SUCCESS.
//   - Warning(msg): WARNING, a success worth a look.
//   - Retry(err) or any other error: ERROR, retried after backoff until the
//     task's max_attempts is used up, then the task is DEAD (an EVERY_NODE
//     task goes on with its next fire time on that node).
//   - RetryAt(err, at): as Retry, but the retry waits until at if the
//     backoff would come sooner.
//   - Permanent(err): ERROR, not retried; the task goes on with its next
//     fire time, or, if it has none, ends DEAD.
//   - Cancel(reason): CANCELED; the task has no more runs.
//   - Snooze(until): the same fire time runs again at until, with no attempt
//     used up; a zero or past until runs it again at once.
//   - RunAgainNow(): SUCCESS, and one more run at once.
//
// A task whose last run failed (ERROR, or INTERRUPTED and not recovered)
// never ends COMPLETED: when it has no fire time left it is DEAD, kept for
// inspection and re-runnable with RunTaskNow.
//
// A handler must respect ctx: it is cancelled at the task's timeout, when
// the node stops, and when the node loses its lease. IdentityLeft(ctx) is
// closed when the identity moves to another node in a planned move (the run
// may finish: its result is handed to the new owner). A handler whose real
// work starts later than its call (after a fork, after connecting
// somewhere) checks LeaseProven(ctx) at the last moment and returns
// ErrLeaseNotProven if it is false, as the built-in exec and webhook
// handlers do. The Run's Fence identifies this run to downstream systems: a
// write carrying an older fence than one already seen is a stale duplicate.
type Handler interface {
	Work(ctx context.Context, run *Run) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, run *Run) error

// Work calls f.
func (f HandlerFunc) Work(ctx context.Context, run *Run) error { return f(ctx, run) }

// Fence is the token of one run: the identity's mapping epoch and the task's
// etcd revision when the run started. Both only grow, so a downstream system
// that keeps the highest fence it has seen can reject a stale duplicate.
type Fence struct {
	Epoch    int64
	Revision int64
}

// String renders the fence as "<epoch>.<revision>", as handed to exec and
// webhook handlers.
func (f Fence) String() string { return fmt.Sprintf("%d.%d", f.Epoch, f.Revision) }

// Less reports whether f is older than o.
func (f Fence) Less(o Fence) bool {
	if f.Epoch != o.Epoch {
		return f.Epoch < o.Epoch
	}
	return f.Revision < o.Revision
}

// Run is one execution of a task, as a handler sees it.
type Run struct {
	Identity  string
	TaskID    string
	Kind      string
	Payload   []byte
	Data      []byte // the task's persistent data before this run
	Labels    map[string]string
	RunNumber int64
	Attempt   int // 1 for the first attempt of a fire time
	FireTime  time.Time
	Fence     Fence
	Node      string
	Manual    bool // a RunTaskNow run
	Recovery  bool // a re-execution of a run that a crash interrupted
	Durable   bool

	newData    []byte
	dataSet    bool
	message    string
	messageSet bool
}

// SetData replaces the task's persistent data; it is stored atomically with
// the run's outcome (whatever the outcome is, unless the run is DROPPED).
func (r *Run) SetData(data []byte) {
	r.newData = append([]byte(nil), data...)
	r.dataSet = true
}

// SetMessage sets the message kept in the run's history.
func (r *Run) SetMessage(msg string) {
	r.message = msg
	r.messageSet = true
}

// outcomeError is the family of errors by which a handler asks for an outcome.
type outcomeError struct {
	kind  outcomeKind
	err   error
	until time.Time // Snooze: when to run again; RetryAt: the earliest retry
	msg   string
}

type outcomeKind int

const (
	outcomeRetry outcomeKind = iota + 1
	outcomePermanent
	outcomeCancel
	outcomeSnooze
	outcomeRunAgain
	outcomeWarning
)

func (e *outcomeError) Error() string {
	switch e.kind {
	case outcomeCancel:
		return "task cancelled by its handler: " + e.msg
	case outcomeSnooze:
		return "snoozed until " + e.until.UTC().Format(time.RFC3339Nano)
	case outcomeRunAgain:
		return "run again now"
	case outcomeWarning:
		return e.msg
	}
	if e.err == nil {
		return "error"
	}
	return e.err.Error()
}

func (e *outcomeError) Unwrap() error { return e.err }

// Retry marks err as retryable (the default for any error; use it to say so
// explicitly).
func Retry(err error) error { return &outcomeError{kind: outcomeRetry, err: err} }

// RetryAt marks err as retryable, with the retry not before at: it comes
// at the later of at and the task's backoff (a server's Retry-After, say).
// It uses an attempt as any retry does. A zero at is Retry(err); an at on
// or after MaxInstant is refused when the outcome is committed (the run is
// then an ERROR retried after the backoff alone).
func RetryAt(err error, at time.Time) error {
	return &outcomeError{kind: outcomeRetry, err: err, until: at}
}

// Permanent marks err as not retryable.
func Permanent(err error) error { return &outcomeError{kind: outcomePermanent, err: err} }

// Cancel ends the task: no more runs.
func Cancel(reason string) error { return &outcomeError{kind: outcomeCancel, msg: reason} }

// Snooze runs the same fire time again at until without using an attempt.
// A zero or past until means at once: the fire time runs again as soon as
// the snooze is committed (it is never taken as "done"). A manual run
// cannot be snoozed: its outcome is recorded and nothing runs again.
func Snooze(until time.Time) error {
	if until.IsZero() {
		until = time.Now() // "at once": the commit moves a past time up to its own
	}
	return &outcomeError{kind: outcomeSnooze, until: until}
}

// RunAgainNow records a success and asks for one more run at once.
func RunAgainNow() error { return &outcomeError{kind: outcomeRunAgain} }

// Warning records a success with a warning message.
func Warning(msg string) error { return &outcomeError{kind: outcomeWarning, msg: msg} }

// asOutcome classifies a handler's error.
func asOutcome(err error) (*outcomeError, bool) {
	var oe *outcomeError
	if errors.As(err, &oe) {
		return oe, true
	}
	return nil, false
}

// Request is what a handler's returned error asks for.
type Request int

// The requests a handler's error can make (see Handler).
const (
	RequestSuccess   Request = iota // nil
	RequestRetry                    // Retry, RetryAt or any other error
	RequestPermanent                // Permanent
	RequestCancel                   // Cancel
	RequestSnooze                   // Snooze
	RequestRunAgain                 // RunAgainNow
	RequestWarning                  // Warning
)

func (r Request) String() string {
	switch r {
	case RequestSuccess:
		return "success"
	case RequestRetry:
		return "retry"
	case RequestPermanent:
		return "permanent"
	case RequestCancel:
		return "cancel"
	case RequestSnooze:
		return "snooze"
	case RequestRunAgain:
		return "run again"
	case RequestWarning:
		return "warning"
	}
	return fmt.Sprintf("Request(%d)", int(r))
}

// Requested reports what a handler's error asks for, and the time it names:
// a snooze's until (never zero), a RetryAt's at, zero otherwise. It lets a
// handler that wraps another, or a test, read an outcome without running a
// node.
func Requested(err error) (Request, time.Time) {
	if err == nil {
		return RequestSuccess, time.Time{}
	}
	oe, ok := asOutcome(err)
	if !ok {
		return RequestRetry, time.Time{}
	}
	switch oe.kind {
	case outcomePermanent:
		return RequestPermanent, time.Time{}
	case outcomeCancel:
		return RequestCancel, time.Time{}
	case outcomeSnooze:
		return RequestSnooze, oe.until
	case outcomeRunAgain:
		return RequestRunAgain, time.Time{}
	case outcomeWarning:
		return RequestWarning, time.Time{}
	}
	return RequestRetry, oe.until
}

// IsRetryable reports whether a handler's error asks for a retry: true for
// any error except nil and the outcome errors that are not retries
// (Permanent, Cancel, Snooze, RunAgainNow, Warning).
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	if oe, ok := asOutcome(err); ok {
		return oe.kind == outcomeRetry
	}
	return true
}

package runs

import (
	"context"
	"time"
)

// Call is one run as its handler is to see it (taskservice.Run, which the
// public face builds from it).
type Call struct {
	Identity  string
	TaskID    string
	Kind      string
	Payload   []byte
	Data      []byte
	Labels    map[string]string
	RunNumber int64
	Attempt   int
	FireTime  time.Time
	Fence     Fence
	Node      string
	Manual    bool
	Recovery  bool
	Durable   bool
}

// Caller calls handlers for the run path. It is the node's public face,
// which owns the Handler contract: the Run a handler sees, the vetoes it
// asks, and what a handler's returned error asks for.
type Caller interface {
	// Prepare returns run c as its vetoes and its handler see it.
	Prepare(c Call) Prepared
}

// Prepared is one run, ready to be vetoed and called.
type Prepared interface {
	// Veto asks the node's vetoes whether the run may start: the first
	// veto's reason, or "".
	Veto(ctx context.Context) string
	// Work calls the run's handler: the node's own for its kind, or else
	// the remote worker reserved for it (reserved, never nil then). A
	// panic is returned as an error. It reports what the handler
	// returned, asked for and left on the run.
	Work(ctx context.Context, reserved any) Answer
}

// Ask is what a handler's error asks for (taskservice.Request).
type Ask int

// The asks, as taskservice's outcome errors make them.
const (
	AskError     Ask = iota // an error that is none of the below: retried
	AskRetry                // Retry, RetryAt
	AskPermanent            // Permanent
	AskCancel               // Cancel
	AskSnooze               // Snooze
	AskRunAgain             // RunAgainNow
	AskWarning              // Warning
)

// Answer is what a run's handler returned and left on its run.
type Answer struct {
	Err   error
	Ask   Ask       // for a non-nil Err
	Until time.Time // AskSnooze: when to run again; AskRetry: the earliest retry
	// Text is the outcome error's message: for AskWarning and AskCancel
	// the handler's message, else the error's text.
	Text string
	// Data is the data the handler set (DataSet), Message the message it
	// set (MessageSet).
	Data       []byte
	DataSet    bool
	Message    string
	MessageSet bool
}

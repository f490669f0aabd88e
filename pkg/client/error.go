package client

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors, one per outcome a caller usually acts on. Every error a
// call returns is an *Error, which errors.Is matches against these by its
// gRPC code:
//
//	if errors.Is(err, client.ErrNotFound) { ... }
var (
	// ErrInvalidArgument: the request was refused; the message names the field.
	ErrInvalidArgument = &sentinel{codes.InvalidArgument, "invalid argument"}
	// ErrNotFound: no such task, identity, node or calendar.
	ErrNotFound = &sentinel{codes.NotFound, "not found"}
	// ErrAlreadyExists: an idempotency key already names a different task.
	ErrAlreadyExists = &sentinel{codes.AlreadyExists, "already exists"}
	// ErrFailedPrecondition: the call does not fit the current state (a
	// completed task cancelled, a move to a node that is not RUNNING, a kind
	// nothing serves).
	ErrFailedPrecondition = &sentinel{codes.FailedPrecondition, "failed precondition"}
	// ErrAborted: a conditional update lost to a concurrent change; read
	// again and retry.
	ErrAborted = &sentinel{codes.Aborted, "aborted"}
	// ErrUnauthenticated and ErrPermissionDenied: the token is missing, wrong
	// or lacks the verb.
	ErrUnauthenticated  = &sentinel{codes.Unauthenticated, "unauthenticated"}
	ErrPermissionDenied = &sentinel{codes.PermissionDenied, "permission denied"}
	// ErrUnavailable: no endpoint answered within the retries.
	ErrUnavailable = &sentinel{codes.Unavailable, "unavailable"}
	// ErrCursorExpired: an event cursor is older than the cluster's event
	// retention; watch again without one.
	ErrCursorExpired = &sentinel{codes.OutOfRange, "cursor expired"}
)

// Error is a failed call: the gRPC code and message the server (or the
// transport) gave, the call it came from, and how many attempts were made.
type Error struct {
	// Op is the client method, e.g. "Schedule".
	Op string
	// Code and Message are the last attempt's gRPC status.
	Code    codes.Code
	Message string
	// Attempts made, 1 when the call was not retried.
	Attempts int
	// st is the status as the server sent it, with its details (the
	// cursor a stream ended with, internal/resume); nil for the client's
	// own errors.
	st *status.Status
}

func (e *Error) Error() string {
	if e.Attempts > 1 {
		return fmt.Sprintf("%s: %s: %s (after %d attempts)", e.Op, e.Code, e.Message, e.Attempts)
	}
	return fmt.Sprintf("%s: %s: %s", e.Op, e.Code, e.Message)
}

// GRPCStatus lets status.FromError and status.Code read the error, with
// the details the server sent.
func (e *Error) GRPCStatus() *status.Status {
	if e.st != nil {
		return e.st
	}
	return status.New(e.Code, e.Message)
}

// Is matches the sentinel of e's code.
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	return ok && s.code == e.Code
}

type sentinel struct {
	code codes.Code
	text string
}

func (s *sentinel) Error() string { return s.text }

// wrap turns a gRPC error into an *Error.
func wrap(op string, err error, attempts int) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	st := status.Convert(err)
	return &Error{Op: op, Code: st.Code(), Message: st.Message(), Attempts: attempts, st: st}
}

// invalid is a client-side refusal of a bad argument, worded as the
// server's are: the field first.
func invalid(op, field, format string, args ...any) error {
	return &Error{Op: op, Code: codes.InvalidArgument, Message: field + ": " + fmt.Sprintf(format, args...), Attempts: 0}
}

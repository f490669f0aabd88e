package grpcapi

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/etcdstatus"
	"github.com/taskd/taskd/internal/resume"
	"github.com/taskd/taskd/pkg/taskservice"
)

// Status maps an error of the node to the gRPC status a service returns:
// the one mapping of taskservice's errors (its sentinels and error types)
// to codes; any other error is mapped as an etcd error (etcdstatus.Of). A
// *taskservice.SpecError not named by its request (specIn) is named as
// ScheduleTasks names its specs.
func Status(err error) error {
	if err == nil {
		return nil
	}
	var sp *taskservice.SpecError
	var ia *taskservice.InvalidArgumentError
	var ui *taskservice.UnimplementedError
	var se *taskservice.StreamEndError
	switch {
	case errors.As(err, &sp):
		return Status(sp.In(fmt.Sprintf("tasks[%d]", sp.Index)))
	case errors.As(err, &se):
		if errors.Is(se.Err, taskservice.ErrReaderBehind) {
			return resume.Status(codes.ResourceExhausted, se.Error(), resume.ReasonReaderBehind, se.Cursor)
		}
		return resume.Status(codes.Unavailable, se.Error(), resume.ReasonInterrupted, se.Cursor)
	case errors.Is(err, taskservice.ErrCursorExpired):
		return status.Error(codes.OutOfRange, err.Error())
	case errors.As(err, &ia):
		return status.Error(codes.InvalidArgument, ia.Error())
	case errors.As(err, &ui):
		return status.Error(codes.Unimplemented, ui.Error())
	case errors.Is(err, taskservice.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, taskservice.ErrFailedPrecondition):
		return status.Error(codes.FailedPrecondition, withoutSentinel(err, taskservice.ErrFailedPrecondition))
	case errors.Is(err, taskservice.ErrConflict):
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, taskservice.ErrAlreadyExists):
		return status.Error(codes.AlreadyExists, withoutSentinel(err, taskservice.ErrAlreadyExists))
	case errors.Is(err, taskservice.ErrTooLarge):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, taskservice.ErrTooManyStreams):
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.Is(err, taskservice.ErrOutcomeUnknown):
		return status.Error(codes.Unavailable, err.Error()+"; retry with the same idempotency key to be sure of one task")
	}
	return etcdstatus.Of(err)
}

// specIn names the field of an error of Node.Schedule as the request
// does: path(i) is the path of the request's i-th spec ("task",
// "tasks[3]"). Schedule names a spec's fields relative to the spec
// (taskservice.SpecError); the request's shape is the gRPC layer's to
// know. Any other error is returned as it is.
func specIn(err error, path func(i int) string) error {
	var sp *taskservice.SpecError
	if errors.As(err, &sp) {
		return sp.In(path(sp.Index))
	}
	return err
}

// withoutSentinel is err's message without the ": failed precondition" or
// ": already exists" its sentinel ends it with: the status code says that,
// and the rest is a whole sentence ("calendar "x" is in use by task T"),
// so a client that prints code and message says it once.
func withoutSentinel(err, sentinel error) string {
	return strings.TrimSuffix(err.Error(), ": "+sentinel.Error())
}

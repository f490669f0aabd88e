// Package resume carries the cursor a WatchEvents stream ended with to its
// client: the node puts it in the ending status as a
// google.rpc.ErrorInfo detail (domain "taskd.v1", metadata "cursor"), and
// the clients (pkg/client, taskctl, the console) read it back to reconnect
// from it. The cursor is also in the status message, for people.
package resume

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Domain and CursorKey name the ErrorInfo detail and its cursor.
const (
	Domain    = "taskd.v1"
	CursorKey = "cursor"
)

// Reasons of the ErrorInfo detail.
const (
	// ReasonReaderBehind: the reader fell behind by more than the stream's
	// buffer (RESOURCE_EXHAUSTED).
	ReasonReaderBehind = "EVENT_READER_BEHIND"
	// ReasonInterrupted: the node stopped, or lost events (UNAVAILABLE).
	ReasonInterrupted = "EVENT_STREAM_INTERRUPTED"
)

// Status is the gRPC error of code and msg carrying cursor under reason.
func Status(code codes.Code, msg, reason, cursor string) error {
	st := status.New(code, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: Domain,
		Metadata: map[string]string{CursorKey: cursor}}); err == nil {
		st = d
	}
	return st.Err()
}

// Cursor returns the cursor a stream's ending error carries, if any.
func Cursor(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	var gs interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &gs) {
		return "", false
	}
	for _, d := range gs.GRPCStatus().Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == Domain && ei.GetMetadata()[CursorKey] != "" {
			return ei.GetMetadata()[CursorKey], true
		}
	}
	return "", false
}

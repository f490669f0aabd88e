package eventhub

import (
	"errors"
	"fmt"
)

// The errors a stream ends with. pkg/taskservice names them to its users
// (with their doc comments there); the values are these, so that errors.Is
// and errors.As hold on either name.
var (
	// ErrReaderBehind: the stream's reader fell behind by more than its
	// buffer (Config.Buffer).
	ErrReaderBehind = errors.New("the event reader fell behind")
	// ErrStreamInterrupted: the node is stopping, or its watch lost
	// events.
	ErrStreamInterrupted = errors.New("the event stream was interrupted")
	// ErrCursorExpired: etcd has compacted the history a cursor points
	// into.
	ErrCursorExpired = errors.New("the cursor is older than the event retention window")
	// ErrTooManyStreams: Config.MaxStreams streams are open.
	ErrTooManyStreams = errors.New("the node serves as many event streams as it may (--max-event-streams)")
	// ErrInvalidCursor: a cursor that no event was given; the caller
	// names the field it came in.
	ErrInvalidCursor = errors.New("not a cursor from an earlier event")
)

// StreamEndError ends a stream that the Hub could not carry on. Every event
// up to Cursor that matched the filter was sent, and none after it: a new
// stream from Cursor goes on without a gap or a repeat.
type StreamEndError struct {
	Err    error // ErrReaderBehind or ErrStreamInterrupted
	Cursor string
	Reason string
}

func (e *StreamEndError) Error() string {
	return fmt.Sprintf("%s (%s); resume from cursor %s", e.Err, e.Reason, e.Cursor)
}

func (e *StreamEndError) Unwrap() error { return e.Err }

// Why a subscriber was ended (subscriber.finish).
var (
	errStreamStopping = errors.New("the node is stopping")
	errEventGap       = errors.New("the node's event watch lost history to compaction")
	errSubBehind      = errors.New("more events waited for the reader than its buffer holds")
)

// endError is what a stream ended for why returns.
func endError(why error, cursor string) error {
	switch {
	case errors.Is(why, errSubBehind):
		return &StreamEndError{Err: ErrReaderBehind, Cursor: cursor, Reason: why.Error()}
	case errors.Is(why, errStreamStopping), errors.Is(why, errEventGap):
		return &StreamEndError{Err: ErrStreamInterrupted, Cursor: cursor, Reason: why.Error()}
	}
	return why
}

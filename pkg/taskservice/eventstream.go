package taskservice

import (
	"context"
	"errors"

	"github.com/taskd/taskd/internal/eventhub"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// The event streams are served by the node's event hub
// (internal/eventhub); this is their public face.

// ErrReaderBehind reports a WatchEvents stream whose reader fell behind by
// more than the stream's buffer (Config.EventBuffer): the node ended it
// rather than buffer without limit (RESOURCE_EXHAUSTED). The error is a
// *StreamEndError: reconnect with its Cursor.
var ErrReaderBehind = eventhub.ErrReaderBehind

// ErrStreamInterrupted reports a WatchEvents stream the node ended because
// it is stopping, or because its own watch lost events (UNAVAILABLE). The
// error is a *StreamEndError: reconnect with its Cursor, to any node.
var ErrStreamInterrupted = eventhub.ErrStreamInterrupted

// StreamEndError ends a WatchEvents stream that the node could not carry
// on. Every event up to Cursor that matched the filter was sent, and none
// after it: a new stream from Cursor goes on without a gap or a repeat.
// Err is ErrReaderBehind or ErrStreamInterrupted.
type StreamEndError = eventhub.StreamEndError

// ErrCursorExpired reports a WatchEvents cursor older than the cluster's
// event retention: etcd has compacted the history it points into
// (OUT_OF_RANGE). Start again without a cursor.
var ErrCursorExpired = eventhub.ErrCursorExpired

// EventFilter selects the events WatchEvents streams; empty fields match
// all.
type EventFilter = eventhub.Filter

// WatchEvents streams the events matching f to send, in etcd revision
// order (so in order for each task), from the event after cursor on (empty:
// from now), until ctx ends or send fails. Every node serves every event of
// the cluster: the events are derived from the writes of the records
// themselves, by the node's one watch (internal/eventhub), and send must
// not modify them (other streams share them). A cursor older than etcd's
// retained history gives ErrCursorExpired.
//
// The stream holds at most Config.EventBuffer bytes of events for its
// reader: one that falls further behind is ended with a *StreamEndError
// (ErrReaderBehind) naming the cursor to resume from; a node that stops
// ends its streams the same way (ErrStreamInterrupted). Past
// Config.MaxEventStreams streams, one more is refused (ErrTooManyStreams).
func (n *Node) WatchEvents(ctx context.Context, f EventFilter, cursor string, send func([]*taskdv1.Event) error) error {
	err := n.hub.Watch(ctx, f, cursor, send)
	if errors.Is(err, eventhub.ErrInvalidCursor) {
		return invalid("cursor", "%q is not a cursor from an earlier event", cursor)
	}
	return err
}

// EventStreams counts the WatchEvents streams the node's event watch
// feeds now (a stream still catching up from an old cursor joins it
// later).
func (n *Node) EventStreams() int { return n.hub.Subscribers() }

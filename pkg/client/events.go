package client

import (
	"context"
	"fmt"
	"io"
	"iter"
	"math"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/backoff"
	"github.com/taskd/taskd/internal/resume"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// EventFilter selects events; empty fields match everything. Cursor, from
// an earlier Event, starts after that event; empty starts with the events
// from now on.
type EventFilter struct {
	Identity string
	// TaskID, with Identity, selects one task's events.
	TaskID string
	Kind   string
	Node   string
	Types  []EventType
	Cursor string
}

// Events yields the cluster's task events that match f, in order for each
// task, until ctx ends (then it just stops) or an error that a reconnection
// cannot mend: a bad filter, a refused token, or ErrCursorExpired. When the
// stream breaks (its node stopped, the network failed) it reconnects, to
// another endpoint if need be, from the cursor of the last event it
// yielded, so nothing is missed or yielded twice. A loop body slower than
// the events come makes the node end the stream (RESOURCE_EXHAUSTED with
// the cursor to resume from, see docs/contract.md): Events reconnects from
// that cursor at once, so a slow consumer is never buffered for without
// limit and still misses nothing.
func (c *Client) Events(ctx context.Context, f EventFilter) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		req, err := f.request("Events")
		if err != nil {
			yield(Event{}, err)
			return
		}
		b := backoff.New(c.o.backoff, c.o.maxBackoff)
		for ctx.Err() == nil {
			i := c.pick()
			sctx, cancel := context.WithCancel(ctx)
			stream, err := c.apis[i].WatchEvents(sctx, req)
			for err == nil {
				var resp *taskdv1.WatchEventsResponse
				resp, err = stream.Recv()
				if err != nil {
					break
				}
				b.Reset() // a stream that delivers is a healthy one
				for _, e := range resp.GetEvents() {
					req.Cursor = e.GetCursor()
					if !yield(eventFromProto(e), nil) {
						cancel()
						return
					}
				}
			}
			cancel()
			if ctx.Err() != nil {
				return
			}
			// A stream the node ended (its reader fell behind, the node is
			// stopping) names the cursor to go on from: every event up to
			// it that matches was yielded.
			if cursor, ok := resume.Cursor(err); ok {
				req.Cursor = cursor
				if status.Code(err) == codes.ResourceExhausted {
					continue // the reader is back: go on at once
				}
			}
			if !reconnectable(err) {
				yield(Event{}, wrap("Events", err, 1))
				return
			}
			if code := status.Code(err); code == codes.Unavailable || code == codes.DeadlineExceeded {
				c.cur.CompareAndSwap(i, (i+1)%uint32(len(c.conns)))
			}
			if !b.Wait(ctx) {
				return
			}
		}
	}
}

// From returns the cursor that starts a watch at the write that stored t as
// it was read (t.Revision): the watch yields that write's events and every
// later one, so nothing that happens to the task after Schedule or Get
// returned it is missed. A zero Task gives "", events from now on.
func From(t *Task) string {
	if t == nil || t.Revision <= 1 {
		return ""
	}
	// A cursor names the last event seen: every event of the revision
	// before the task's.
	return fmt.Sprintf("%d.%d", t.Revision-1, math.MaxInt32)
}

// reconnectable errors end a stream without saying anything about the
// request: the node went away, or the stream was cut.
func reconnectable(err error) bool {
	if err == io.EOF {
		return true // the server ended the stream (it is stopping)
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Internal, codes.Unknown:
		return true
	}
	return false
}

// EventStream is one event stream, as Watch opened it. It is not safe for
// concurrent use: one goroutine calls Recv.
type EventStream struct {
	stream interface {
		Recv() (*taskdv1.WatchEventsResponse, error)
	}
	cancel context.CancelFunc
	// c and endpoint are where it goes: a broken stream moves the client
	// on to the next endpoint, for the caller's next Watch.
	c        *Client
	endpoint uint32
}

// Watch opens one stream of the events that match f, on the current
// endpoint, and does not reopen it when it breaks: for a caller with a
// rule of its own for a broken stream (taskctl's events command reports
// each reconnection and stops a catch-up at the first break; the console
// hands the cursor to the browser, which reconnects). Events, which
// reconnects by itself and misses nothing, is the one to use otherwise.
// The stream ends with ctx, or with Close.
func (c *Client) Watch(ctx context.Context, f EventFilter) (*EventStream, error) {
	req, err := f.request("Watch")
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &EventStream{cancel: cancel, c: c, endpoint: c.pick()}
	stream, err := c.apis[s.endpoint].WatchEvents(sctx, req)
	if err != nil {
		cancel()
		return nil, s.failed(err)
	}
	s.stream = stream
	return s, nil
}

// Recv returns the events of the next message of the stream, in order. It
// returns io.EOF when the node ended the stream without an error (it is
// stopping), else the stream's error as an *Error: its gRPC status keeps
// the details the node sent, such as the cursor to go on from of a stream
// it ended (RESOURCE_EXHAUSTED for a reader that fell behind, see
// docs/contract.md).
func (s *EventStream) Recv() ([]Event, error) {
	resp, err := s.stream.Recv()
	if err == io.EOF {
		return nil, err
	}
	if err != nil {
		return nil, s.failed(err)
	}
	evs := make([]Event, 0, len(resp.GetEvents()))
	for _, e := range resp.GetEvents() {
		evs = append(evs, eventFromProto(e))
	}
	return evs, nil
}

// failed moves the client on from an endpoint that did not answer and
// returns err as an *Error.
func (s *EventStream) failed(err error) error {
	if code := status.Code(err); code == codes.Unavailable || code == codes.DeadlineExceeded {
		s.c.cur.CompareAndSwap(s.endpoint, (s.endpoint+1)%uint32(len(s.c.conns)))
	}
	return wrap("Watch", err, 1)
}

// Close ends the stream.
func (s *EventStream) Close() { s.cancel() }

// request is the WatchEvents request of f; op names the caller in an
// error.
func (f EventFilter) request(op string) (*taskdv1.WatchEventsRequest, error) {
	types, err := enumsToProto(op, "Types", f.Types, eventTypeToProto, "an event type")
	if err != nil {
		return nil, err
	}
	return &taskdv1.WatchEventsRequest{Identity: f.Identity, TaskId: f.TaskID, Kind: f.Kind, Node: f.Node, Types: types, Cursor: f.Cursor}, nil
}

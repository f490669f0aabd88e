package eventcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/cli/render"
	"github.com/taskd/taskd/internal/resume"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file streams the events, opening a broken stream again after the
// last cursor printed.

// Reconnection of a broken stream under -f.
const (
	maxReconnects    = 10                     // attempts in a row without an event in between
	reconnectBackoff = 100 * time.Millisecond // wait before the first attempt, doubled each time
	maxBackoff       = 3 * time.Second
	defaultIdle      = time.Second
)

// errCaughtUp ends a catch-up stream that was quiet for --idle.
var errCaughtUp = errors.New("no event for the idle time")

// errStreamEnded is a stream the server closed without an error (its node
// stopping, for instance).
var errStreamEnded = errors.New("the server ended the stream")

// eventStream is one opened stream of events.
type eventStream interface {
	Recv() (*taskdv1.WatchEventsResponse, error)
}

// eventWatch is one run of the events command.
type eventWatch struct {
	// open opens one stream from req, which it must not keep: its cursor
	// changes (client.Watch in the command, a script in tests).
	open   func(ctx context.Context, req *taskdv1.WatchEventsRequest) (eventStream, error)
	req    *taskdv1.WatchEventsRequest // its cursor follows the events printed
	follow bool
	idle   time.Duration
	// backoff is the wait before reconnect attempt n (1, 2, ...).
	backoff func(n int) time.Duration
	print   func(*taskdv1.Event) error
	warn    func(msg string)
}

// run streams until the watch has caught up (without follow), ctx ends
// (nil: a stop asked for is a clean end), or the stream fails for good.
func (w *eventWatch) run(ctx context.Context) error {
	attempts := 0
	for {
		progress, err := w.stream(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			return nil
		}
		// A stream the node ended names the cursor to go on from: every
		// matching event up to it was printed.
		if cursor, ok := resume.Cursor(err); ok {
			w.req.Cursor = cursor
			if status.Code(err) == codes.ResourceExhausted {
				// This command read too slowly (its output is slow to
				// take): go on at once, with or without -f.
				continue
			}
		}
		if progress {
			attempts = 0
		}
		if !w.follow || !reconnectable(err) || attempts == maxReconnects {
			if errors.Is(err, errStreamEnded) {
				return fmt.Errorf("%w before catching up; run again with --cursor %s", err, w.req.GetCursor())
			}
			return err
		}
		attempts++
		wait := w.backoff(attempts)
		from := "after cursor " + w.req.GetCursor()
		if w.req.GetCursor() == "" {
			from = "from now (no event came yet: events in between are missed)"
		}
		w.warn(fmt.Sprintf("stream broke (%s); reconnecting %s in %s, attempt %d of %d",
			describeStreamError(err), from, wait, attempts, maxReconnects))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// stream opens one stream and prints its events until it ends; progress
// tells whether any event came. A catch-up stream (without follow) ends
// with nil once it was quiet for the idle time.
func (w *eventWatch) stream(ctx context.Context) (progress bool, err error) {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var quiet *time.Timer
	if !w.follow {
		quiet = time.AfterFunc(w.idle, func() { cancel(errCaughtUp) })
		defer quiet.Stop()
	}
	s, err := w.open(sctx, w.req)
	if err != nil {
		return false, w.streamErr(sctx, err)
	}
	for {
		resp, err := s.Recv()
		if err != nil {
			return progress, w.streamErr(sctx, err)
		}
		if quiet != nil {
			quiet.Stop()
		}
		for _, ev := range resp.GetEvents() {
			if err := w.print(ev); err != nil {
				return progress, err
			}
			w.req.Cursor = ev.GetCursor()
			progress = true
		}
		if quiet != nil {
			quiet.Reset(w.idle)
		}
	}
}

// streamErr makes sense of the error that ended a stream: nil when it was
// quiet for the idle time, errStreamEnded at a clean end.
func (w *eventWatch) streamErr(sctx context.Context, err error) error {
	switch {
	case errors.Is(context.Cause(sctx), errCaughtUp):
		return nil
	case errors.Is(err, io.EOF):
		return errStreamEnded
	}
	return err
}

// reconnectable reports whether a stream that ended with err is worth
// opening again: the node or the network was unavailable, or the server
// closed it.
func reconnectable(err error) bool {
	return status.Code(err) == codes.Unavailable || errors.Is(err, errStreamEnded)
}

// describeStreamError renders the error of a broken stream.
func describeStreamError(err error) string {
	if st, ok := status.FromError(err); ok {
		return fmt.Sprintf("%s: %s", st.Code(), render.OneLine(st.Message()))
	}
	return render.OneLine(err.Error())
}

// nextBackoff doubles the wait for each attempt, from reconnectBackoff up
// to maxBackoff.
func nextBackoff(n int) time.Duration {
	d := reconnectBackoff
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

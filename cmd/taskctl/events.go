package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/taskd/taskd/internal/eventview"
	"github.com/taskd/taskd/internal/resume"
	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is the events command: it prints the task events the cluster
// streams (WatchEvents), either those after a cursor until it has caught
// up, or (-f) every event from now or from a cursor until it is stopped.
//
// The stream has no end of its own, so "caught up" is a quiet spell: with
// no event for --idle, the events after the cursor that had happened are
// printed. A stream that breaks (UNAVAILABLE, or ended by the server) is
// opened again after the last cursor printed, so that under -f no event is
// lost or printed twice.

// Reconnection of a broken stream under -f.
const (
	maxReconnects    = 10                     // attempts in a row without an event in between
	reconnectBackoff = 100 * time.Millisecond // wait before the first attempt, doubled each time
	maxBackoff       = 3 * time.Second
	defaultIdle      = time.Second
)

// eventsOptions holds the events flags as given.
type eventsOptions struct {
	Identity string
	Task     string
	Kind     string
	Node     string
	Types    []string // comma-separated lists, repeatable
	Cursor   string
	Follow   bool
	Idle     time.Duration
}

// defineEventsFlags registers the events flags into o.
func defineEventsFlags(fs *flag.FlagSet, o *eventsOptions) {
	fs.StringVar(&o.Identity, "identity", "", "keep the events of the identity `ID`")
	fs.StringVar(&o.Task, "task", "", "keep the events of the task `TASK_ID`")
	fs.StringVar(&o.Kind, "kind", "", "keep the events of tasks of `KIND`")
	fs.StringVar(&o.Node, "node", "", "keep the events that happened on `NODE`")
	fs.Var((*stringList)(&o.Types), "type", "keep events of these `TYPES`, e.g. fired,succeeded,failed (any case, EVENT_TYPE_ prefix optional; repeatable)")
	fs.StringVar(&o.Cursor, "cursor", "", "start after the event of `CURSOR` (the last field of a line); required without -f")
	fs.BoolVar(&o.Follow, "f", false, "follow: print events as they happen until interrupted (Ctrl-C), from now or from --cursor")
	fs.DurationVar(&o.Idle, "idle", defaultIdle, "without -f: stop once no event has come for `DUR`, having caught up")
}

// buildWatchRequest turns the events flags into a WatchEventsRequest.
// given reports whether a flag was on the command line. Every error is a
// usageError naming the flag.
func buildWatchRequest(o eventsOptions, given func(string) bool) (*taskdv1.WatchEventsRequest, error) {
	if o.Follow && given("idle") {
		return nil, usagef("--idle needs a catch-up without -f: -f follows until interrupted")
	}
	if !o.Follow && o.Cursor == "" {
		return nil, usagef("missing required flag --cursor: without -f, events prints what happened after a cursor; -f follows from now")
	}
	if o.Idle <= 0 {
		return nil, usagef("invalid value %q for flag --idle: must be positive", o.Idle)
	}
	req := &taskdv1.WatchEventsRequest{Identity: o.Identity, TaskId: o.Task, Kind: o.Kind, Node: o.Node, Cursor: o.Cursor}
	for _, list := range o.Types {
		for _, v := range strings.Split(list, ",") {
			t, err := parseEventType(v)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(req.Types, t) {
				req.Types = append(req.Types, t)
			}
		}
	}
	return req, nil
}

// parseEventType maps a --type value to an EventType: the name (fired,
// NEXT_SCHEDULED, next-scheduled) in any case, with or without the
// EVENT_TYPE_ prefix.
func parseEventType(v string) (taskdv1.EventType, error) {
	s := strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(v)), "-", "_")
	s = strings.TrimPrefix(s, "EVENT_TYPE_")
	if n, ok := taskdv1.EventType_value["EVENT_TYPE_"+s]; ok && n != int32(taskdv1.EventType_EVENT_TYPE_UNSPECIFIED) {
		return taskdv1.EventType(n), nil
	}
	return 0, usagef("invalid value %q for flag --type: want event types such as %s", v, strings.Join(eventTypeNames(), ","))
}

// eventTypeNames lists the event types in lower case, in their order.
func eventTypeNames() []string {
	var names []string
	for n := int32(1); ; n++ {
		name, ok := taskdv1.EventType_name[n]
		if !ok {
			return names
		}
		names = append(names, strings.ToLower(strings.TrimPrefix(name, "EVENT_TYPE_")))
	}
}

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
		return fmt.Sprintf("%s: %s", st.Code(), oneLine(st.Message()))
	}
	return oneLine(err.Error())
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

// defineEvents defines the events command.
func defineEvents(fs *flag.FlagSet) action {
	o := &eventsOptions{}
	defineEventsFlags(fs, o)
	return func(e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		req, err := buildWatchRequest(*o, func(n string) bool { return flagGiven(fs, n) })
		if err != nil {
			return err
		}
		c, err := e.taskClient()
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(e.context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		w := &eventWatch{
			open: func(ctx context.Context, req *taskdv1.WatchEventsRequest) (eventStream, error) {
				return watch(ctx, c, req)
			},
			req:     req,
			follow:  o.Follow,
			idle:    o.Idle,
			backoff: nextBackoff,
			print: func(ev *taskdv1.Event) error {
				if e.opts.format == formatJSON {
					return writeEventJSON(e.stdout, ev)
				}
				_, err := fmt.Fprintln(e.stdout, formatEvent(ev))
				return err
			},
			warn: func(msg string) { fmt.Fprintf(e.stderr, "taskctl: %s: %s\n", e.cmd, msg) },
		}
		err = w.run(ctx)
		if status.Code(err) == codes.OutOfRange {
			return &hintError{err: err, hint: "the events after that cursor are no longer kept; start again without --cursor: 'taskctl events -f' follows from now"}
		}
		return err
	}
}

// watch opens one stream of the events req selects through the client,
// which does not reopen it: eventWatch does, by its own rules.
func watch(ctx context.Context, c *client.Client, req *taskdv1.WatchEventsRequest) (eventStream, error) {
	f := client.EventFilter{Identity: req.GetIdentity(), TaskID: req.GetTaskId(), Kind: req.GetKind(), Node: req.GetNode(), Cursor: req.GetCursor()}
	for _, t := range req.GetTypes() {
		f.Types = append(f.Types, client.EventType(strings.TrimPrefix(t.String(), "EVENT_TYPE_")))
	}
	s, err := c.Watch(ctx, f)
	if err != nil {
		return nil, err
	}
	return apiEvents{s}, nil
}

// apiEvents gives a client's event stream the form eventWatch prints.
type apiEvents struct{ s *client.EventStream }

func (a apiEvents) Recv() (*taskdv1.WatchEventsResponse, error) {
	evs, err := a.s.Recv()
	if err != nil {
		return nil, err
	}
	resp := &taskdv1.WatchEventsResponse{}
	for _, ev := range evs {
		resp.Events = append(resp.Events, ev.Proto)
	}
	return resp, nil
}

// hintError is an error with advice for the person who runs the command,
// printed after it.
type hintError struct {
	err  error
	hint string
}

// Error returns the error followed by the hint.
func (h *hintError) Error() string { return h.err.Error() + " (" + h.hint + ")" }

// Unwrap returns the error.
func (h *hintError) Unwrap() error { return h.err }

// eventTypeWidth is the width of the longest event type name, for aligned
// lines.
var eventTypeWidth = func() int {
	w := 0
	for _, n := range eventTypeNames() {
		w = max(w, len(n))
	}
	return w
}()

// eventTimeLayout is RFC 3339 with milliseconds.
const eventTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// formatEvent renders an event on one line: time (UTC, milliseconds),
// type, identity, task, then what the event has of run number, attempt,
// node, kind (of a kind pause), outcome, next fire time, "armed" (a run
// armed ahead of its fire time, internal/eventview), count and message,
// and last the cursor to resume after it.
func formatEvent(ev *taskdv1.Event) string {
	at := "-"
	if ev.GetTime() != nil {
		at = ev.GetTime().AsTime().UTC().Format(eventTimeLayout)
	}
	typ := strings.TrimPrefix(ev.GetType().String(), "EVENT_TYPE_")
	parts := []string{at, fmt.Sprintf("%-*s", eventTypeWidth, typ), cell(ev.GetIdentity()), cell(ev.GetTaskId())}
	if ev.GetRunNumber() > 0 {
		parts = append(parts, "run "+strconv.FormatInt(ev.GetRunNumber(), 10))
	}
	if ev.GetAttempt() > 1 {
		parts = append(parts, "attempt "+strconv.Itoa(int(ev.GetAttempt())))
	}
	if ev.GetNode() != "" {
		parts = append(parts, "node "+cell(ev.GetNode()))
	}
	if ev.GetTaskId() == "" && ev.GetKind() != "" {
		parts = append(parts, "kind "+cell(ev.GetKind()))
	}
	if ev.GetOutcome() != taskdv1.Outcome_OUTCOME_UNSPECIFIED {
		parts = append(parts, "outcome "+outcomeName(ev.GetOutcome()))
	}
	if ev.GetNext() != nil {
		parts = append(parts, "next "+ev.GetNext().AsTime().UTC().Format(eventTimeLayout))
	}
	if eventview.Armed(ev) {
		// Written up to --look-ahead before its time: lines stay in the
		// order of the cluster's writes, and this one says why its time is
		// later than the next line's.
		parts = append(parts, "armed")
	}
	if ev.GetCount() > 0 {
		parts = append(parts, "count "+strconv.FormatInt(ev.GetCount(), 10))
	}
	if m := oneLine(ev.GetMessage()); m != "" {
		parts = append(parts, "message "+strconv.Quote(m))
	}
	parts = append(parts, "cursor "+ev.GetCursor())
	return strings.Join(parts, "  ")
}

// writeEventJSON writes an event as protojson on one line.
func writeEventJSON(w io.Writer, ev *taskdv1.Event) error {
	b, err := protojson.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

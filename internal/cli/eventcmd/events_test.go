package eventcmd

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/resume"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// parseEvents parses the events flags from args and builds the request.
func parseEvents(t *testing.T, args ...string) (*taskdv1.WatchEventsRequest, error) {
	t.Helper()
	o := eventsOptions{}
	fs := cmdline.NewFlagSet("events")
	defineEventsFlags(fs, &o)
	if _, err := cmdline.ParseInterspersed(fs, args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return buildWatchRequest(o, func(n string) bool { return cmdline.FlagGiven(fs, n) })
}

func TestBuildWatchRequest(t *testing.T) {
	const (
		fired     = taskdv1.EventType_EVENT_TYPE_FIRED
		succeeded = taskdv1.EventType_EVENT_TYPE_SUCCEEDED
		next      = taskdv1.EventType_EVENT_TYPE_NEXT_SCHEDULED
	)
	for _, tc := range []struct {
		name string
		args []string
		want *taskdv1.WatchEventsRequest
	}{
		{"follow from now", []string{"-f"}, &taskdv1.WatchEventsRequest{}},
		{"follow with every filter", []string{"-f", "--identity", "alice", "--task", "t1", "--kind", "demo", "--node", "vm", "--cursor", "12.3"},
			&taskdv1.WatchEventsRequest{Identity: "alice", TaskId: "t1", Kind: "demo", Node: "vm", Cursor: "12.3"}},
		{"catch-up", []string{"--cursor", "12.3", "--idle", "5s"}, &taskdv1.WatchEventsRequest{Cursor: "12.3"}},
		{"types in any case, with or without prefix, repeated", []string{"-f", "--type", "fired,EVENT_TYPE_SUCCEEDED", "--type", "Next-Scheduled", "--type", "event_type_fired"},
			&taskdv1.WatchEventsRequest{Types: []taskdv1.EventType{fired, succeeded, next}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseEvents(t, tc.args...)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !proto.Equal(tc.want, got) {
				t.Errorf("request mismatch:\n got: %v\nwant: %v", got, tc.want)
			}
		})
	}
}

func TestBuildWatchRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "missing required flag --cursor"},
		{[]string{"--identity", "alice"}, "missing required flag --cursor"},
		{[]string{"-f", "--type", "exploded"}, `invalid value "exploded" for flag --type`},
		{[]string{"-f", "--type", "fired,"}, `invalid value "" for flag --type`},
		{[]string{"-f", "--type", "unspecified"}, "flag --type"},
		{[]string{"-f", "--type", "EVENT_TYPE_UNSPECIFIED"}, "flag --type"},
		{[]string{"-f", "--idle", "2s"}, "--idle needs a catch-up without -f"},
		{[]string{"--cursor", "1.0", "--idle", "0s"}, "flag --idle"},
	} {
		if req, err := parseEvents(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("events %q: %v, %v; want an error containing %q", tc.args, req, err, tc.want)
		} else if _, ok := err.(*cmdline.UsageError); !ok {
			t.Errorf("events %q: %T, want a usage error", tc.args, err)
		}
	}
}

func TestParseEventType(t *testing.T) {
	// Every type is accepted by its own name, in lower case, with or
	// without the prefix.
	for n, name := range taskdv1.EventType_name {
		if n == 0 {
			continue
		}
		for _, v := range []string{name, strings.ToLower(name), strings.TrimPrefix(name, "EVENT_TYPE_"), strings.ToLower(strings.TrimPrefix(name, "EVENT_TYPE_"))} {
			if got, err := parseEventType(v); err != nil || got != taskdv1.EventType(n) {
				t.Errorf("parseEventType(%q) = %v, %v; want %v", v, got, err, taskdv1.EventType(n))
			}
		}
	}
	if _, err := parseEventType("RETRY_SCHEDULED"); err == nil || !strings.Contains(err.Error(), "retrying") {
		t.Errorf("unknown type: %v, want an error listing the types", err)
	}
}

func TestNextBackoff(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= maxReconnects; n++ {
		got = append(got, nextBackoff(n))
	}
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("backoffs %v, want %v", got, want)
	}
}

// scriptedStream is what one WatchEvents call of fakeWatchClient answers:
// its batches, then its end (nil: it stays open until its context ends).
type scriptedStream struct {
	batches [][]*taskdv1.Event
	end     error
}

// fakeWatchClient answers WatchEvents calls with its streams in turn and
// records the requests.
type fakeWatchClient struct {
	taskdv1.TaskServiceClient
	mu      sync.Mutex
	streams []scriptedStream
	reqs    []*taskdv1.WatchEventsRequest
}

func (f *fakeWatchClient) WatchEvents(ctx context.Context, req *taskdv1.WatchEventsRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[taskdv1.WatchEventsResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, proto.Clone(req).(*taskdv1.WatchEventsRequest))
	if len(f.streams) == 0 {
		return nil, errors.New("fake: no stream left")
	}
	s := f.streams[0]
	f.streams = f.streams[1:]
	return &fakeEventStream{ctx: ctx, script: s}, nil
}

// cursors returns the cursor of every request made.
func (f *fakeWatchClient) cursors() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var cs []string
	for _, r := range f.reqs {
		cs = append(cs, r.GetCursor())
	}
	return cs
}

// fakeEventStream plays one scriptedStream.
type fakeEventStream struct {
	grpc.ClientStream
	ctx    context.Context
	script scriptedStream
}

func (s *fakeEventStream) Recv() (*taskdv1.WatchEventsResponse, error) {
	if len(s.script.batches) > 0 {
		b := s.script.batches[0]
		s.script.batches = s.script.batches[1:]
		return &taskdv1.WatchEventsResponse{Events: b}, nil
	}
	if s.script.end != nil {
		return nil, s.script.end
	}
	<-s.ctx.Done()
	return nil, status.FromContextError(s.ctx.Err()).Err()
}

// evs makes events with the given cursors.
func evs(cursors ...string) []*taskdv1.Event {
	var out []*taskdv1.Event
	for _, c := range cursors {
		out = append(out, &taskdv1.Event{Type: taskdv1.EventType_EVENT_TYPE_FIRED, Identity: "alice", Cursor: c})
	}
	return out
}

func TestEventWatch(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "connection refused")
	for _, tc := range []struct {
		name    string
		follow  bool
		cursor  string
		streams []scriptedStream
		stopAt  string // the printed cursor at which the test stops the watch, as Ctrl-C would
		stopOn  int    // or the warning after which it stops it (while the watch waits to reconnect)
		printed []string
		reqs    []string // cursors of the requests
		warns   int
		err     codes.Code // of the error run returns; OK: nil
		errText string
	}{
		{name: "follow reconnects after the last event printed", follow: true,
			streams: []scriptedStream{
				{batches: [][]*taskdv1.Event{evs("5.0", "5.1")}, end: unavailable},
				{batches: [][]*taskdv1.Event{evs("6.0")}, end: io.EOF},
				{batches: [][]*taskdv1.Event{evs("7.0"), evs("8.0")}},
			},
			stopAt: "8.0", printed: []string{"5.0", "5.1", "6.0", "7.0", "8.0"}, reqs: []string{"", "5.1", "6.0"}, warns: 2},
		{name: "follow from a cursor, before any event", follow: true, cursor: "3.4",
			streams: []scriptedStream{{end: unavailable}, {batches: [][]*taskdv1.Event{evs("4.0")}}},
			stopAt:  "4.0", printed: []string{"4.0"}, reqs: []string{"3.4", "3.4"}, warns: 1},
		{name: "follow gives up after 10 attempts in a row without an event", follow: true,
			streams: append([]scriptedStream{
				{batches: [][]*taskdv1.Event{evs("5.0")}, end: unavailable},
				{end: unavailable}, {end: unavailable},
				{batches: [][]*taskdv1.Event{evs("6.0")}, end: unavailable}, // an event starts the count again
			}, slices.Repeat([]scriptedStream{{end: unavailable}}, maxReconnects)...),
			printed: []string{"5.0", "6.0"}, reqs: append([]string{"", "5.0", "5.0", "5.0"}, slices.Repeat([]string{"6.0"}, maxReconnects)...),
			warns: 3 + maxReconnects, err: codes.Unavailable},
		{name: "follow stops at an error other than unavailable", follow: true,
			streams: []scriptedStream{{batches: [][]*taskdv1.Event{evs("5.0")}, end: status.Error(codes.OutOfRange, "compacted")}},
			printed: []string{"5.0"}, reqs: []string{""}, err: codes.OutOfRange},
		{name: "follow stopped while it waits to reconnect", follow: true,
			streams: []scriptedStream{{end: unavailable}},
			stopOn:  1, reqs: []string{""}, warns: 1},
		{name: "catch-up stops once quiet", cursor: "4.9",
			streams: []scriptedStream{{batches: [][]*taskdv1.Event{evs("5.0", "5.1"), evs("6.0")}}},
			printed: []string{"5.0", "5.1", "6.0"}, reqs: []string{"4.9"}},
		{name: "catch-up with nothing to print", cursor: "4.9",
			streams: []scriptedStream{{}}, reqs: []string{"4.9"}},
		{name: "catch-up does not reconnect", cursor: "4.9",
			streams: []scriptedStream{{batches: [][]*taskdv1.Event{evs("5.0")}, end: unavailable}},
			printed: []string{"5.0"}, reqs: []string{"4.9"}, err: codes.Unavailable},
		{name: "catch-up ended by the server says where to resume", cursor: "4.9",
			streams: []scriptedStream{{batches: [][]*taskdv1.Event{evs("5.0")}, end: io.EOF}},
			printed: []string{"5.0"}, reqs: []string{"4.9"}, err: codes.Unknown, errText: "run again with --cursor 5.0"},
		{name: "follow goes on at once from the cursor of a stream ended behind", follow: true,
			streams: []scriptedStream{
				{batches: [][]*taskdv1.Event{evs("5.0")}, end: resume.Status(codes.ResourceExhausted, "behind", resume.ReasonReaderBehind, "5.3")},
				{batches: [][]*taskdv1.Event{evs("6.0")}},
			},
			stopAt: "6.0", printed: []string{"5.0", "6.0"}, reqs: []string{"", "5.3"}},
		{name: "catch-up goes on from the cursor of a stream ended behind", cursor: "4.9",
			streams: []scriptedStream{
				{batches: [][]*taskdv1.Event{evs("5.0")}, end: resume.Status(codes.ResourceExhausted, "behind", resume.ReasonReaderBehind, "5.2")},
				{batches: [][]*taskdv1.Event{evs("6.0")}},
			},
			printed: []string{"5.0", "6.0"}, reqs: []string{"4.9", "5.2"}},
		{name: "follow reconnects from the cursor a stopping node names", follow: true,
			streams: []scriptedStream{
				{batches: [][]*taskdv1.Event{evs("5.0")}, end: resume.Status(codes.Unavailable, "stopping", resume.ReasonInterrupted, "5.4")},
				{batches: [][]*taskdv1.Event{evs("6.0")}},
			},
			stopAt: "6.0", printed: []string{"5.0", "6.0"}, reqs: []string{"", "5.4"}, warns: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := &fakeWatchClient{streams: tc.streams}
			var printed []string
			warns := 0
			w := &eventWatch{
				open: func(ctx context.Context, req *taskdv1.WatchEventsRequest) (eventStream, error) {
					return client.WatchEvents(ctx, req)
				},
				req:    &taskdv1.WatchEventsRequest{Identity: "alice", Cursor: tc.cursor},
				follow: tc.follow,
				// Long enough that the fake's events, which come at once,
				// never look quiet.
				idle: 200 * time.Millisecond,
				backoff: func(int) time.Duration {
					if tc.stopOn > 0 {
						return time.Hour // only the stop ends the wait
					}
					return 0
				},
				print: func(ev *taskdv1.Event) error {
					printed = append(printed, ev.GetCursor())
					if ev.GetCursor() == tc.stopAt {
						cancel()
					}
					return nil
				},
				warn: func(msg string) {
					warns++
					if !strings.Contains(msg, "reconnecting") {
						t.Errorf("warning %q", msg)
					}
					if warns == tc.stopOn {
						cancel()
					}
				},
			}
			err := w.run(ctx)
			if status.Code(err) != tc.err || (tc.errText != "" && !strings.Contains(err.Error(), tc.errText)) {
				t.Errorf("run: %v, want code %v containing %q", err, tc.err, tc.errText)
			}
			if !slices.Equal(printed, tc.printed) {
				t.Errorf("printed %q, want %q", printed, tc.printed)
			}
			if got := client.cursors(); !slices.Equal(got, tc.reqs) {
				t.Errorf("requests with cursors %q, want %q", got, tc.reqs)
			}
			if warns != tc.warns {
				t.Errorf("%d warnings, want %d", warns, tc.warns)
			}
		})
	}
}

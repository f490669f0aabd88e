// Package eventcmd is taskctl's events command: it prints the task events
// the cluster streams (WatchEvents, through pkg/client), either those after
// a cursor until it has caught up, or (-f) every event from now or from a
// cursor until it is stopped.
//
// The stream has no end of its own, so "caught up" is a quiet spell: with
// no event for --idle, the events after the cursor that had happened are
// printed. A stream that breaks (UNAVAILABLE, or ended by the server) is
// opened again after the last cursor printed, so that under -f no event is
// lost or printed twice. No lock: the command runs on one goroutine.
package eventcmd

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/cli/command"
	"github.com/taskd/taskd/internal/cli/render"
	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Events defines the events command.
func Events(fs *flag.FlagSet) command.Action {
	o := &eventsOptions{}
	defineEventsFlags(fs, o)
	return func(e *command.Env, args []string) error {
		if err := cmdline.NoArgs(args); err != nil {
			return err
		}
		req, err := buildWatchRequest(*o, func(n string) bool { return cmdline.FlagGiven(fs, n) })
		if err != nil {
			return err
		}
		c, err := e.TaskClient()
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(e.Context(), os.Interrupt, syscall.SIGTERM)
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
				if e.JSON() {
					return render.WriteEventJSON(e.Stdout, ev)
				}
				_, err := fmt.Fprintln(e.Stdout, render.FormatEvent(ev))
				return err
			},
			warn: func(msg string) { fmt.Fprintf(e.Stderr, "taskctl: %s: %s\n", e.Cmd, msg) },
		}
		err = w.run(ctx)
		if status.Code(err) == codes.OutOfRange {
			return &command.HintError{Err: err, Hint: "the events after that cursor are no longer kept; start again without --cursor: 'taskctl events -f' follows from now"}
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
	return &taskdv1.WatchEventsResponse{Events: command.Protos(evs, func(ev client.Event) *taskdv1.Event { return ev.Proto })}, nil
}

package eventcmd

import (
	"flag"
	"slices"
	"strings"
	"time"

	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/cli/render"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file turns the flags of events into the request of its streams.

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
	fs.Var((*cmdline.StringList)(&o.Types), "type", "keep events of these `TYPES`, e.g. fired,succeeded,failed (any case, EVENT_TYPE_ prefix optional; repeatable)")
	fs.StringVar(&o.Cursor, "cursor", "", "start after the event of `CURSOR` (the last field of a line); required without -f")
	fs.BoolVar(&o.Follow, "f", false, "follow: print events as they happen until interrupted (Ctrl-C), from now or from --cursor")
	fs.DurationVar(&o.Idle, "idle", defaultIdle, "without -f: stop once no event has come for `DUR`, having caught up")
}

// buildWatchRequest turns the events flags into a WatchEventsRequest.
// given reports whether a flag was on the command line. Every error is a
// cmdline.UsageError naming the flag.
func buildWatchRequest(o eventsOptions, given func(string) bool) (*taskdv1.WatchEventsRequest, error) {
	if o.Follow && given("idle") {
		return nil, cmdline.Usagef("--idle needs a catch-up without -f: -f follows until interrupted")
	}
	if !o.Follow && o.Cursor == "" {
		return nil, cmdline.Usagef("missing required flag --cursor: without -f, events prints what happened after a cursor; -f follows from now")
	}
	if o.Idle <= 0 {
		return nil, cmdline.Usagef("invalid value %q for flag --idle: must be positive", o.Idle)
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
	if n, ok := cmdline.ParseEnum(v, "EVENT_TYPE_", taskdv1.EventType_value); ok {
		return taskdv1.EventType(n), nil
	}
	return 0, cmdline.Usagef("invalid value %q for flag --type: want event types such as %s", v, strings.Join(render.EventTypeNames(), ","))
}

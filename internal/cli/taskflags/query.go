package taskflags

import (
	"flag"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/cli/cmdline"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is what the commands that ask without changing anything are
// given: preview, and list.

// PreviewOptions holds the preview command's flags.
type PreviewOptions struct {
	triggerOptions
	Calendars []string
	From      string
	Count     int
	TaskID    string
}

// DefinePreviewFlags registers the preview command's flags into o.
func DefinePreviewFlags(fs *flag.FlagSet, o *PreviewOptions) {
	defineTriggerFlags(fs, &o.triggerOptions, false)
	fs.Var((*cmdline.StringList)(&o.Calendars), "calendar", "`NAME` of an exclusion calendar to apply (repeatable)")
	fs.StringVar(&o.From, "from", "", "list the fire times from the `RFC3339` time on (default: now)")
	fs.IntVar(&o.Count, "n", 10, "number of fire times, 1-1000 (`N`)")
	fs.StringVar(&o.TaskID, "task", "", "show the instants the task `ID`'s runs are due: its id fixes each --jitter delay")
}

// BuildPreviewRequest turns the preview flags into a PreviewTriggersRequest.
// now is the client's clock: --delay with --every counts from --from, or
// from now. Every error is a cmdline.UsageError naming the flag.
func BuildPreviewRequest(o PreviewOptions, now time.Time) (*taskdv1.PreviewTriggersRequest, error) {
	from, err := parseTimeFlag("from", o.From)
	if err != nil {
		return nil, err
	}
	if from != nil {
		now = *from
	}
	if o.Count < 1 || o.Count > 1000 {
		return nil, cmdline.Usagef("invalid value %d for flag -n: must be between 1 and 1000", o.Count)
	}
	triggers, err := someTriggers(o.triggerOptions, now, "missing trigger: give --cron, --every, --at or --delay")
	if err != nil {
		return nil, err
	}
	cals, err := parseCalendars(o.Calendars)
	if err != nil {
		return nil, err
	}
	req := &taskdv1.PreviewTriggersRequest{Triggers: triggers, Calendars: cals, Count: int32(o.Count), TaskId: o.TaskID}
	if from != nil {
		req.From = timestamppb.New(*from)
	}
	return req, nil
}

// BuildListRequest turns the list flags into a ListTasksRequest. Every
// error is a cmdline.UsageError naming the flag.
func BuildListRequest(identity string, states []string, kind string, labels []string, node string, pageSize int, pageToken string) (*taskdv1.ListTasksRequest, error) {
	if pageSize < 0 || pageSize > 1000 {
		return nil, cmdline.Usagef("invalid value %d for flag --page-size: must be between 0 and 1000", pageSize)
	}
	req := &taskdv1.ListTasksRequest{Identity: identity, Kind: kind, Node: node, PageSize: int32(pageSize), PageToken: pageToken}
	for _, v := range states {
		st, err := parseState(v)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(req.States, st) {
			req.States = append(req.States, st)
		}
	}
	var err error
	if req.Labels, err = parseLabels("label", labels); err != nil {
		return nil, err
	}
	return req, nil
}

// parseState maps a --state value to a TaskState: a state's name (dead,
// SCHEDULED) in any case, with - or _, or the enum name.
func parseState(v string) (taskdv1.TaskState, error) {
	if n, ok := cmdline.ParseEnum(v, "TASK_STATE_", taskdv1.TaskState_value); ok {
		return taskdv1.TaskState(n), nil
	}
	return 0, cmdline.Usagef("invalid value %q for flag --state: want scheduled, running, retrying, paused, completed, dead or canceled", v)
}

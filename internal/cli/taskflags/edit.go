package taskflags

import (
	"flag"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/cli/cmdline"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is what the commands that change a scheduled task are given:
// update, and trigger add.

// UpdateOptions holds the update command's flags.
type UpdateOptions struct {
	Identity    string
	Task        string
	Revision    int64
	NoLabels    bool
	NoCalendars bool
	triggerOptions
	specOptions
}

// DefineUpdateFlags registers the update command's flags into o.
func DefineUpdateFlags(fs *flag.FlagSet, o *UpdateOptions) {
	fs.StringVar(&o.Identity, "identity", "", "`ID` of the identity that owns the task (required)")
	fs.StringVar(&o.Task, "task", "", "task `ID` (instead of the TASK_ID argument)")
	fs.Int64Var(&o.Revision, "revision", 0, "update only if the task is still at revision `N` (from an earlier get); default: the revision this command reads")
	defineTriggerFlags(fs, &o.triggerOptions, true)
	defineSpecFlags(fs, &o.specOptions)
	fs.BoolVar(&o.NoLabels, "no-labels", false, "remove every label")
	fs.BoolVar(&o.NoCalendars, "no-calendars", false, "remove every calendar")
}

// BuildUpdate checks the update flags and returns the function that makes
// the UpdateTaskRequest from the task as read: its spec with the flags
// given applied (triggers replaced if any trigger flag is given; labels and
// calendars replaced if given), its data left out so that the server keeps
// it unless --data is given, and the revision read (or --revision).
func BuildUpdate(o UpdateOptions, given func(string) bool, now time.Time) (func(*taskdv1.Task) (*taskdv1.UpdateTaskRequest, error), error) {
	var triggers []*taskdv1.Trigger
	replaceTriggers := false
	for _, name := range triggerFlags {
		replaceTriggers = replaceTriggers || given(name)
	}
	if replaceTriggers {
		var err error
		if triggers, err = someTriggers(o.triggerOptions, now, "the trigger flags given make no trigger: give --at, --delay, --every, --cron or --on-startup"); err != nil {
			return nil, err
		}
	}
	if o.NoLabels && given("label") {
		return nil, cmdline.Usagef("--no-labels and --label exclude each other")
	}
	if o.NoCalendars && given("calendar") {
		return nil, cmdline.Usagef("--no-calendars and --calendar exclude each other")
	}
	// Check the settings once on a scratch spec, so that a bad flag is
	// reported before any call.
	if err := applySpecOptions(&taskdv1.TaskSpec{}, o.specOptions, given); err != nil {
		return nil, err
	}
	return func(t *taskdv1.Task) (*taskdv1.UpdateTaskRequest, error) {
		spec := proto.Clone(t.GetSpec()).(*taskdv1.TaskSpec)
		spec.Data = nil
		if err := applySpecOptions(spec, o.specOptions, given); err != nil {
			return nil, err
		}
		if replaceTriggers {
			spec.Triggers = triggers
		}
		if o.NoLabels {
			spec.Labels = nil
		}
		if o.NoCalendars {
			spec.Calendars = nil
		}
		rev := t.GetRevision()
		if o.Revision != 0 {
			rev = o.Revision
		}
		return &taskdv1.UpdateTaskRequest{Identity: spec.GetIdentity(), TaskId: t.GetId(), Spec: spec, Revision: rev}, nil
	}, nil
}

// TriggerAddOptions holds the flags of trigger add.
type TriggerAddOptions struct {
	Identity string
	Task     string
	Revision int64
	Name     string
	triggerOptions
}

// DefineTriggerAddFlags registers the flags of trigger add into o.
func DefineTriggerAddFlags(fs *flag.FlagSet, o *TriggerAddOptions) {
	fs.StringVar(&o.Identity, "identity", "", "`ID` of the identity that owns the task (required)")
	fs.StringVar(&o.Task, "task", "", "task `ID` (instead of the TASK_ID argument)")
	fs.Int64Var(&o.Revision, "revision", 0, "add only if the task is still at revision `N` (from an earlier get)")
	fs.StringVar(&o.Name, "name", "", "`NAME` of the trigger (default: the server names it #N); only when the flags make one trigger")
	defineTriggerFlags(fs, &o.triggerOptions, true)
}

// BuildTriggerAdd turns the flags of trigger add into the UpdateTask
// request that adds the triggers they make. now is the client's clock.
func BuildTriggerAdd(o TriggerAddOptions, task string, now time.Time) (*taskdv1.UpdateTaskRequest, error) {
	if err := cmdline.RequireFlag("identity", o.Identity); err != nil {
		return nil, err
	}
	if o.Revision < 0 {
		return nil, cmdline.Usagef("invalid value %d for flag --revision: must be positive", o.Revision)
	}
	triggers, err := someTriggers(o.triggerOptions, now, "missing trigger: give --at, --delay, --every, --cron or --on-startup")
	if err != nil {
		return nil, err
	}
	if o.Name != "" {
		if len(triggers) > 1 {
			return nil, cmdline.Usagef("--name names one trigger, but the flags make %d: add them one at a time", len(triggers))
		}
		triggers[0].Name = o.Name
	}
	return &taskdv1.UpdateTaskRequest{Identity: o.Identity, TaskId: task, AddTriggers: triggers, Revision: o.Revision}, nil
}

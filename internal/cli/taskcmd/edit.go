package taskcmd

import (
	"context"
	"flag"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/cli/command"
	"github.com/taskd/taskd/internal/cli/taskflags"
	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file holds the commands that change a scheduled task, keeping its
// id and history: update, and trigger add and remove, which leave the
// task's other triggers as they are.

// updateOwnFlags are the update flags that change nothing by themselves.
var updateOwnFlags = []string{"identity", "task", "revision", "o", "output"}

// updateResponse is the API's response of update and of trigger add and
// remove, which -o json prints.
func updateResponse(t *taskdv1.Task) proto.Message { return &taskdv1.UpdateTaskResponse{Task: t} }

// Update defines update: it reads the task, applies the flags given to its
// spec and writes it back conditional on the revision read, so that a
// change in between fails with ABORTED instead of being overwritten.
func Update(fs *flag.FlagSet) command.Action {
	o := &taskflags.UpdateOptions{}
	taskflags.DefineUpdateFlags(fs, o)
	return func(e *command.Env, args []string) error {
		id, err := taskID(o.Task, args)
		if err != nil {
			return err
		}
		if err := cmdline.RequireFlag("identity", o.Identity); err != nil {
			return err
		}
		given := func(name string) bool { return cmdline.FlagGiven(fs, name) }
		if cmdline.OtherFlag(fs, updateOwnFlags...) == "" {
			return cmdline.Usagef("nothing to update: give a trigger flag (--cron, --every, ...) or a setting (--payload, --priority, --label, ...)")
		}
		if o.Revision < 0 {
			return cmdline.Usagef("invalid value %d for flag --revision: must be positive", o.Revision)
		}
		// The flags are checked before anything is read.
		edit, err := taskflags.BuildUpdate(*o, given, time.Now())
		if err != nil {
			return err
		}
		return taskCall(e, func(ctx context.Context, c *client.Client) (*client.Task, error) {
			got, err := c.Get(ctx, o.Identity, id)
			if err != nil {
				return nil, err
			}
			req, err := edit(got.Proto)
			if err != nil {
				return nil, err
			}
			// The spec as the API spells it, so that what the flags leave
			// alone is sent back as it was read.
			return c.Update(ctx, req.GetIdentity(), req.GetTaskId(), client.TaskSpec{Proto: req.GetSpec()}, req.GetRevision())
		}, updateResponse)
	}
}

// TriggerAdd defines trigger add: it adds the triggers its flags make.
func TriggerAdd(fs *flag.FlagSet) command.Action {
	o := &taskflags.TriggerAddOptions{}
	taskflags.DefineTriggerAddFlags(fs, o)
	return func(e *command.Env, args []string) error {
		id, err := taskID(o.Task, args)
		if err != nil {
			return err
		}
		req, err := taskflags.BuildTriggerAdd(*o, id, time.Now())
		if err != nil {
			return err
		}
		return editTriggers(e, req)
	}
}

// TriggerRemove defines trigger remove: TASK_ID then the names of the
// triggers to remove.
func TriggerRemove(fs *flag.FlagSet) command.Action {
	identity := fs.String("identity", "", "`ID` of the identity that owns the task (required)")
	revision := fs.Int64("revision", 0, "remove only if the task is still at revision `N` (from an earlier get)")
	return func(e *command.Env, args []string) error {
		if err := cmdline.RequireFlag("identity", *identity); err != nil {
			return err
		}
		if len(args) < 2 {
			return cmdline.Usagef("give TASK_ID and the NAME of at least one trigger (get shows the names)")
		}
		if *revision < 0 {
			return cmdline.Usagef("invalid value %d for flag --revision: must be positive", *revision)
		}
		return editTriggers(e, &taskdv1.UpdateTaskRequest{Identity: *identity, TaskId: args[0], RemoveTriggers: args[1:], Revision: *revision})
	}
}

// editTriggers adds and removes the triggers req names and prints the task
// as updated.
func editTriggers(e *command.Env, req *taskdv1.UpdateTaskRequest) error {
	return taskCall(e, func(ctx context.Context, c *client.Client) (*client.Task, error) {
		edit := client.TriggerEdit{Remove: req.GetRemoveTriggers(), Revision: req.GetRevision()}
		for _, t := range req.GetAddTriggers() {
			edit.Add = append(edit.Add, client.Trigger{Proto: t})
		}
		return c.EditTriggers(ctx, req.GetIdentity(), req.GetTaskId(), edit)
	}, updateResponse)
}

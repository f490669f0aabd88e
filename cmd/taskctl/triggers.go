package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file holds the commands that add a trigger to a task or remove
// some of its triggers, leaving the others as they are (trigger add,
// trigger remove), and the one that deletes a finished task (delete).

// triggerAddOptions holds the flags of trigger add.
type triggerAddOptions struct {
	Identity string
	Task     string
	Revision int64
	Name     string
	triggerOptions
}

// defineTriggerAddFlags registers the flags of trigger add into o.
func defineTriggerAddFlags(fs *flag.FlagSet, o *triggerAddOptions) {
	fs.StringVar(&o.Identity, "identity", "", "`ID` of the identity that owns the task (required)")
	fs.StringVar(&o.Task, "task", "", "task `ID` (instead of the TASK_ID argument)")
	fs.Int64Var(&o.Revision, "revision", 0, "add only if the task is still at revision `N` (from an earlier get)")
	fs.StringVar(&o.Name, "name", "", "`NAME` of the trigger (default: the server names it #N); only when the flags make one trigger")
	defineTriggerFlags(fs, &o.triggerOptions, true)
}

// buildTriggerAdd turns the flags of trigger add into the UpdateTask
// request that adds the triggers they make. now is the client's clock.
func buildTriggerAdd(o triggerAddOptions, task string, now time.Time) (*taskdv1.UpdateTaskRequest, error) {
	if err := requireFlag("identity", o.Identity); err != nil {
		return nil, err
	}
	if o.Revision < 0 {
		return nil, usagef("invalid value %d for flag --revision: must be positive", o.Revision)
	}
	triggers, err := buildTriggers(o.triggerOptions, now)
	if err != nil {
		return nil, err
	}
	if len(triggers) == 0 {
		return nil, usagef("missing trigger: give --at, --delay, --every, --cron or --on-startup")
	}
	if o.Name != "" {
		if len(triggers) > 1 {
			return nil, usagef("--name names one trigger, but the flags make %d: add them one at a time", len(triggers))
		}
		triggers[0].Name = o.Name
	}
	return &taskdv1.UpdateTaskRequest{Identity: o.Identity, TaskId: task, AddTriggers: triggers, Revision: o.Revision}, nil
}

// defineTriggerAdd defines trigger add.
func defineTriggerAdd(fs *flag.FlagSet) action {
	o := &triggerAddOptions{}
	defineTriggerAddFlags(fs, o)
	return func(e *env, args []string) error {
		id, err := taskID(o.Task, args)
		if err != nil {
			return err
		}
		req, err := buildTriggerAdd(*o, id, time.Now())
		if err != nil {
			return err
		}
		return updateCall(e, req)
	}
}

// defineTriggerRemove defines trigger remove: TASK_ID then the names of
// the triggers to remove.
func defineTriggerRemove(fs *flag.FlagSet) action {
	identity := fs.String("identity", "", "`ID` of the identity that owns the task (required)")
	revision := fs.Int64("revision", 0, "remove only if the task is still at revision `N` (from an earlier get)")
	return func(e *env, args []string) error {
		if err := requireFlag("identity", *identity); err != nil {
			return err
		}
		if len(args) < 2 {
			return usagef("give TASK_ID and the NAME of at least one trigger (get shows the names)")
		}
		if *revision < 0 {
			return usagef("invalid value %d for flag --revision: must be positive", *revision)
		}
		return updateCall(e, &taskdv1.UpdateTaskRequest{Identity: *identity, TaskId: args[0], RemoveTriggers: args[1:], Revision: *revision})
	}
}

// updateCall adds and removes the triggers req names and prints the task
// as updated.
func updateCall(e *env, req *taskdv1.UpdateTaskRequest) error {
	return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.UpdateTaskResponse, error) {
		edit := client.TriggerEdit{Remove: req.GetRemoveTriggers(), Revision: req.GetRevision()}
		for _, t := range req.GetAddTriggers() {
			edit.Add = append(edit.Add, client.Trigger{Proto: t})
		}
		t, err := c.EditTriggers(ctx, req.GetIdentity(), req.GetTaskId(), edit)
		return &taskdv1.UpdateTaskResponse{Task: taskProto(t)}, err
	}, func(resp *taskdv1.UpdateTaskResponse) error {
		return writeTaskDetail(e.stdout, resp.GetTask())
	})
}

// defineDelete defines delete.
func defineDelete(fs *flag.FlagSet) action {
	ref := taskRefFlags(fs)
	return func(e *env, args []string) error {
		identity, id, err := ref(args)
		if err != nil {
			return err
		}
		return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.DeleteTaskResponse, error) {
			return &taskdv1.DeleteTaskResponse{}, c.Delete(ctx, identity, id)
		}, func(*taskdv1.DeleteTaskResponse) error {
			_, err := fmt.Fprintf(e.stdout, "task %s deleted\n", id)
			return err
		})
	}
}

// Package taskcmd holds taskctl's commands on tasks: schedule (from flags,
// or the tasks of a file sent in batches), update, trigger add and remove,
// get, cancel, delete, run-now, runs, list, pause, resume, pauses and
// preview. Each makes its calls through pkg/client and prints the answer
// through internal/cli/render; what their flags mean is
// internal/cli/taskflags'. No lock.
package taskcmd

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/cli/command"
	"github.com/taskd/taskd/internal/cli/render"
	"github.com/taskd/taskd/internal/cli/taskflags"
	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// taskMethod is a call of the client on one task that answers with the
// task: (*client.Client).Get, Cancel, RunNow, Pause or Resume.
type taskMethod func(c *client.Client, ctx context.Context, identity, task string) (*client.Task, error)

// taskID resolves the task id from the positional arguments or --task.
func taskID(flagValue string, args []string) (string, error) {
	return cmdline.ArgOrFlag("task id", "TASK_ID", "task", flagValue, args)
}

// taskRefCommand is the action of a command that names one task: it
// registers --identity ID (required) and --task ID (or the TASK_ID
// argument), and runs act with what they name.
func taskRefCommand(fs *flag.FlagSet, act func(e *command.Env, identity, task string) error) command.Action {
	identity := fs.String("identity", "", "`ID` of the identity that owns the task (required)")
	taskFlag := fs.String("task", "", "task `ID` (instead of the TASK_ID argument)")
	return func(e *command.Env, args []string) error {
		id, err := taskID(*taskFlag, args)
		if err != nil {
			return err
		}
		if err := cmdline.RequireFlag("identity", *identity); err != nil {
			return err
		}
		return act(e, *identity, id)
	}
}

// taskCommand is the action of a command that names one task and answers
// with it (get, cancel, run-now): method is the call, resp makes of its
// answer the API's response, which -o json prints.
func taskCommand(fs *flag.FlagSet, method taskMethod, resp func(*taskdv1.Task) proto.Message) command.Action {
	return taskRefCommand(fs, func(e *command.Env, identity, task string) error {
		return taskCall(e, func(ctx context.Context, c *client.Client) (*client.Task, error) {
			return method(c, ctx, identity, task)
		}, resp)
	})
}

// taskCall makes the calls of rpc, which answer with a task, and shows the
// task, or with -o json the API's response that resp makes of it.
func taskCall(e *command.Env, rpc func(context.Context, *client.Client) (*client.Task, error), resp func(*taskdv1.Task) proto.Message) error {
	return command.CallOne(e, rpc, func(t *client.Task) *taskdv1.Task { return t.Proto }, resp, render.WriteTaskDetail)
}

// Get defines get: it shows a task.
func Get(fs *flag.FlagSet) command.Action {
	return taskCommand(fs, (*client.Client).Get, func(t *taskdv1.Task) proto.Message { return &taskdv1.GetTaskResponse{Task: t} })
}

// Cancel defines cancel: it cancels a task's future runs.
func Cancel(fs *flag.FlagSet) command.Action {
	return taskCommand(fs, (*client.Client).Cancel, func(t *taskdv1.Task) proto.Message { return &taskdv1.CancelTaskResponse{Task: t} })
}

// RunNow defines run-now: it runs a task once at once.
func RunNow(fs *flag.FlagSet) command.Action {
	return taskCommand(fs, (*client.Client).RunNow, func(t *taskdv1.Task) proto.Message { return &taskdv1.RunTaskNowResponse{Task: t} })
}

// Delete defines delete: it deletes a finished task and its history.
func Delete(fs *flag.FlagSet) command.Action {
	return taskRefCommand(fs, func(e *command.Env, identity, task string) error {
		return command.Call(e, func(ctx context.Context, c *client.Client) (*taskdv1.DeleteTaskResponse, error) {
			return &taskdv1.DeleteTaskResponse{}, c.Delete(ctx, identity, task)
		}, func(*taskdv1.DeleteTaskResponse) error {
			_, err := fmt.Fprintf(e.Stdout, "task %s deleted\n", task)
			return err
		})
	})
}

// Runs defines runs: it lists a task's run history.
func Runs(fs *flag.FlagSet) command.Action {
	return taskRefCommand(fs, func(e *command.Env, identity, task string) error {
		return command.Call(e, func(ctx context.Context, c *client.Client) (*taskdv1.ListRunsResponse, error) {
			runs, err := c.Runs(ctx, identity, task)
			return &taskdv1.ListRunsResponse{Runs: command.Protos(runs, func(r client.Run) *taskdv1.Run { return r.Proto })}, err
		}, func(resp *taskdv1.ListRunsResponse) error {
			return render.WriteRunsTable(e.Stdout, resp.GetRuns())
		})
	})
}

// List defines list: it lists tasks by page, or with --all every page.
func List(fs *flag.FlagSet) command.Action {
	identity := fs.String("identity", "", "`ID` of the identity whose tasks to list (default: every identity's)")
	var states, labels cmdline.StringList
	fs.Var(&states, "state", "keep tasks in `STATE`: scheduled, running, retrying, paused, completed, dead, canceled (repeatable)")
	kind := fs.String("kind", "", "keep tasks of `KIND`")
	fs.Var(&labels, "label", "keep tasks with the label `k=v` (repeatable: all of them)")
	node := fs.String("node", "", "keep tasks of the identities `NODE` owns, and every-node tasks")
	pageSize := fs.Int("page-size", 0, "tasks per page, 1-1000 (`N`; 0: the server's default of 100)")
	pageToken := fs.String("page-token", "", "`TOKEN` of the page to show, from an earlier answer")
	all := fs.Bool("all", false, "follow the page tokens and list every task")
	return func(e *command.Env, args []string) error {
		if err := cmdline.NoArgs(args); err != nil {
			return err
		}
		req, err := taskflags.BuildListRequest(*identity, states, *kind, labels, *node, *pageSize, *pageToken)
		if err != nil {
			return err
		}
		if *all && *pageToken != "" {
			return cmdline.Usagef("--all and --page-token exclude each other")
		}
		c, err := e.TaskClient()
		if err != nil {
			return err
		}
		out := &taskdv1.ListTasksResponse{}
		for {
			resp, err := listPage(e, c, req)
			if err != nil {
				return err
			}
			out.Tasks = append(out.Tasks, resp.GetTasks()...)
			out.NextPageToken = resp.GetNextPageToken()
			if !*all || out.NextPageToken == "" {
				break
			}
			if out.NextPageToken == req.PageToken {
				return fmt.Errorf("server returned the same page token %q twice", out.NextPageToken)
			}
			req.PageToken = out.NextPageToken
		}
		if e.JSON() {
			return render.WriteJSON(e.Stdout, out)
		}
		if err := render.WriteTasksTable(e.Stdout, out.GetTasks(), *identity == ""); err != nil {
			return err
		}
		if out.NextPageToken != "" {
			fmt.Fprintf(e.Stderr, "taskctl: list: more tasks may follow: use --all, or --page-token %s\n", out.NextPageToken)
		}
		return nil
	}
}

// listPage fetches the page of req under its own deadline.
func listPage(e *command.Env, c *client.Client, req *taskdv1.ListTasksRequest) (*taskdv1.ListTasksResponse, error) {
	ctx, cancel := e.RPCContext()
	defer cancel()
	f := client.ListFilter{Identity: req.GetIdentity(), Kind: req.GetKind(), Labels: req.GetLabels(), Node: req.GetNode(), PageSize: req.GetPageSize()}
	for _, st := range req.GetStates() {
		f.States = append(f.States, client.State(strings.TrimPrefix(st.String(), "TASK_STATE_")))
	}
	tasks, next, err := c.ListPage(ctx, f, req.GetPageToken())
	return &taskdv1.ListTasksResponse{Tasks: command.Protos(tasks, func(t *client.Task) *taskdv1.Task { return t.Proto }), NextPageToken: next}, err
}

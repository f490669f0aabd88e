package taskcmd

import (
	"context"
	"flag"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/cli/command"
	"github.com/taskd/taskd/internal/cli/render"
	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file holds the commands that pause a task, an identity or a kind,
// lift such a pause, and list the pauses in force.

// pauseCalls are what pause or resume does with each thing it may name.
type pauseCalls struct {
	// task is the call on a task; taskResponse makes of its answer the
	// API's response, which -o json prints.
	task         taskMethod
	taskResponse func(*taskdv1.Task) proto.Message
	// kind and identity act on every task of the kind or identity name.
	kind, identity func(e *command.Env, name string) error
}

// pauseCommand is the action of pause or resume (verb): it registers
// --identity ID [TASK_ID | --task ID] and --kind KIND, and makes the call
// of calls on what they name.
func pauseCommand(fs *flag.FlagSet, verb string, calls pauseCalls) command.Action {
	identity := fs.String("identity", "", "`ID` of the identity: with a TASK_ID, of the task to "+verb+"; alone, "+verb+" every task of the identity")
	taskFlag := fs.String("task", "", "task `ID` (instead of the TASK_ID argument)")
	kind := fs.String("kind", "", verb+" every task of `KIND` in the cluster")
	return func(e *command.Env, args []string) error {
		if *kind != "" {
			if *identity != "" {
				return cmdline.Usagef("--kind and --identity exclude each other")
			}
			if len(args) > 0 {
				return cmdline.Usagef("unexpected argument %q (--kind names no task)", args[0])
			}
			if *taskFlag != "" {
				return cmdline.Usagef("--kind and --task exclude each other")
			}
			return calls.kind(e, *kind)
		}
		if *identity == "" {
			return cmdline.Usagef("missing required flag --identity or --kind")
		}
		if len(args) == 0 && *taskFlag == "" {
			return calls.identity(e, *identity)
		}
		id, err := taskID(*taskFlag, args)
		if err != nil {
			return err
		}
		return taskCall(e, func(ctx context.Context, c *client.Client) (*client.Task, error) {
			return calls.task(c, ctx, *identity, id)
		}, calls.taskResponse)
	}
}

// Pause defines pause: it pauses a task, an identity or a kind.
func Pause(fs *flag.FlagSet) command.Action {
	return pauseCommand(fs, "pause", pauseCalls{
		task:         (*client.Client).Pause,
		taskResponse: func(t *taskdv1.Task) proto.Message { return &taskdv1.PauseTaskResponse{Task: t} },
		kind: func(e *command.Env, kind string) error {
			return pauseCall(e, func(ctx context.Context, c *client.Client) (*client.Pause, error) { return c.PauseKind(ctx, kind) },
				func(p *taskdv1.Pause) proto.Message { return &taskdv1.PauseKindResponse{Pause: p} })
		},
		identity: func(e *command.Env, identity string) error {
			return pauseCall(e, func(ctx context.Context, c *client.Client) (*client.Pause, error) {
				return c.PauseIdentity(ctx, identity)
			},
				func(p *taskdv1.Pause) proto.Message { return &taskdv1.PauseIdentityResponse{Pause: p} })
		},
	})
}

// pauseCall makes the call of rpc, which answers with a pause, and shows
// the pause, or with -o json the API's response that resp makes of it.
func pauseCall(e *command.Env, rpc func(context.Context, *client.Client) (*client.Pause, error), resp func(*taskdv1.Pause) proto.Message) error {
	return command.CallOne(e, rpc, func(p *client.Pause) *taskdv1.Pause { return p.Proto }, resp, func(w io.Writer, p *taskdv1.Pause) error {
		return render.WritePausesTable(w, []*taskdv1.Pause{p})
	})
}

// Resume defines resume: it lifts a pause of a task, an identity or a kind.
func Resume(fs *flag.FlagSet) command.Action {
	return pauseCommand(fs, "resume", pauseCalls{
		task:         (*client.Client).Resume,
		taskResponse: func(t *taskdv1.Task) proto.Message { return &taskdv1.ResumeTaskResponse{Task: t} },
		kind: func(e *command.Env, kind string) error {
			return resumeCall(e, "kind", kind, (*client.Client).ResumeKind, &taskdv1.ResumeKindResponse{})
		},
		identity: func(e *command.Env, identity string) error {
			return resumeCall(e, "identity", identity, (*client.Client).ResumeIdentity, &taskdv1.ResumeIdentityResponse{})
		},
	})
}

// resumeCall lifts the pause of the kind or identity (what) called name
// with method, and says so, or with -o json prints the API's (empty)
// response resp.
func resumeCall(e *command.Env, what, name string, method func(*client.Client, context.Context, string) error, resp proto.Message) error {
	return command.Call(e, func(ctx context.Context, c *client.Client) (proto.Message, error) {
		return resp, method(c, ctx, name)
	}, func(proto.Message) error {
		_, err := fmt.Fprintf(e.Stdout, "%s %s resumed\n", what, name)
		return err
	})
}

// Pauses defines pauses: it lists the identity and kind pauses in force.
func Pauses(*flag.FlagSet) command.Action {
	return command.List(func(ctx context.Context, c *client.Client) (*taskdv1.ListPausesResponse, error) {
		pauses, err := c.Pauses(ctx)
		return &taskdv1.ListPausesResponse{Pauses: command.Protos(pauses, func(p client.Pause) *taskdv1.Pause { return p.Proto })}, err
	}, func(w io.Writer, resp *taskdv1.ListPausesResponse) error {
		return render.WritePausesTable(w, resp.GetPauses())
	})
}

// Package clustercmd holds taskctl's commands on the cluster itself: nodes
// (the registered nodes), identity (where an identity is mapped), move (an
// identity to another node) and drain (a node). Their calls go through
// pkg/client, their output through internal/cli/render. No lock.
package clustercmd

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

// Nodes defines nodes: it lists the registered nodes of the cluster.
func Nodes(*flag.FlagSet) command.Action {
	return command.List(func(ctx context.Context, c *client.Client) (*taskdv1.ListNodesResponse, error) {
		nodes, err := c.Nodes(ctx)
		return &taskdv1.ListNodesResponse{Nodes: command.Protos(nodes, func(n client.Node) *taskdv1.Node { return n.Proto })}, err
	}, func(w io.Writer, resp *taskdv1.ListNodesResponse) error {
		return render.WriteNodesTable(w, resp.GetNodes())
	})
}

// identityArg resolves the argument of identity and move.
func identityArg(flagValue string, args []string) (string, error) {
	return cmdline.ArgOrFlag("identity", "ID", "identity", flagValue, args)
}

// identityCall makes the call of rpc, which answers with an identity, and
// shows it, or with -o json the API's response that resp makes of it.
func identityCall(e *command.Env, rpc func(context.Context, *client.Client) (*client.Identity, error), resp func(*taskdv1.Identity) proto.Message) error {
	return command.CallOne(e, rpc, func(id *client.Identity) *taskdv1.Identity { return id.Proto }, resp, render.WriteIdentityTable)
}

// Identity defines identity: it shows where an identity is mapped, its
// status and how many tasks it has.
func Identity(fs *flag.FlagSet) command.Action {
	identity := fs.String("identity", "", "`ID` of the identity (instead of the ID argument)")
	return func(e *command.Env, args []string) error {
		id, err := identityArg(*identity, args)
		if err != nil {
			return err
		}
		return identityCall(e, func(ctx context.Context, c *client.Client) (*client.Identity, error) {
			return c.Identity(ctx, id)
		}, func(got *taskdv1.Identity) proto.Message { return &taskdv1.GetIdentityResponse{Identity: got} })
	}
}

// Move defines move: it moves an identity (and its tasks) to a RUNNING
// node.
func Move(fs *flag.FlagSet) command.Action {
	identity := fs.String("identity", "", "`ID` of the identity (instead of the ID argument)")
	to := fs.String("to", "", "`NODE` to move the identity to (required)")
	return func(e *command.Env, args []string) error {
		id, err := identityArg(*identity, args)
		if err != nil {
			return err
		}
		if err := cmdline.RequireFlag("to", *to); err != nil {
			return err
		}
		return identityCall(e, func(ctx context.Context, c *client.Client) (*client.Identity, error) {
			return c.Move(ctx, id, *to)
		}, func(moved *taskdv1.Identity) proto.Message { return &taskdv1.MoveIdentityResponse{Identity: moved} })
	}
}

// Drain defines drain: it asks a node to hand its identities to other
// nodes, then stop.
func Drain(*flag.FlagSet) command.Action {
	return func(e *command.Env, args []string) error {
		if len(args) != 1 {
			return cmdline.Usagef("give exactly one NODE")
		}
		return command.Call(e, func(ctx context.Context, c *client.Client) (*taskdv1.DrainNodeResponse, error) {
			n, err := c.Drain(ctx, args[0])
			if err != nil {
				return nil, err
			}
			return &taskdv1.DrainNodeResponse{Node: n.Proto}, nil
		}, func(*taskdv1.DrainNodeResponse) error {
			fmt.Fprintf(e.Stdout, "drain of %s requested; it hands its identities away, then stops\n", args[0])
			return nil
		})
	}
}

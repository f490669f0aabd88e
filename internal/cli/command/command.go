// Package command is the frame every taskctl command runs in: the Command
// (its name, usage and flags) that cmd/taskctl dispatches to, the Action
// it runs once its flags are parsed, and the Env it runs with — the global
// options, the streams and the client of --addr, made on first use, through
// which every call goes (pkg/client) — with the helpers that make a call
// under the --timeout deadline and print its answer as a table or, with
// -o json, as the API's response. No lock: a command runs on one goroutine.
package command

import (
	"context"
	"errors"
	"flag"
	"io"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/cli/render"
	"github.com/taskd/taskd/internal/tlsfiles"
	"github.com/taskd/taskd/pkg/client"
)

// Action runs a command once its flags are parsed; args are the positional
// arguments.
type Action func(e *Env, args []string) error

// Define registers a command's flags on fs and returns its action, which
// reads the parsed flag values.
type Define func(fs *flag.FlagSet) Action

// Command is one subcommand of taskctl.
type Command struct {
	Name     string // one word, or two for a group's: "calendar create"
	Synopsis string // flags and arguments, for the usage line
	Summary  string
	Define   Define
}

// Options are the global flags given before the command; the output format
// may also be given after it.
type Options struct {
	Addr string
	// TLS names the CA that verifies the node and the client certificate
	// presented to it; any of them set turns TLS on.
	TLS tlsfiles.ClientFiles
	// Token is the bearer token ID.SECRET sent with every call; empty:
	// none.
	Token   string
	Format  render.Format
	Timeout time.Duration
}

// Env is what a command's action works with: the global options, the
// streams and a lazily made client of the node.
type Env struct {
	Cmd    string // the command's name, for its warnings
	Opts   *Options
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Ctx is the context a command that runs until it is stopped (events
	// -f) ends with; nil is context.Background(). Tests cancel it where a
	// person would press Ctrl-C.
	Ctx context.Context
	// Client is the client of --addr, made on first use by TaskClient;
	// tests give one that steps in between calls.
	Client *client.Client
}

// TaskClient returns the client of --addr, creating it on first use. It
// connects with the first call, so that a node that does not answer fails
// that call with the reason the connection gave. Its calls are retried
// and fail over by pkg/client's rules: only what cannot be done twice.
// Tasks scheduled without --idempotency-key are stored without one, as
// asked, and such a schedule is sent once.
func (e *Env) TaskClient() (*client.Client, error) {
	if e.Client != nil {
		return e.Client, nil
	}
	opts := []client.Option{client.WithLazyConnect(), client.WithoutGeneratedKeys(), client.WithCallTimeout(e.Opts.Timeout)}
	if e.Opts.TLS.Set() {
		c, err := tlsfiles.ClientConfig(e.Opts.TLS)
		if err != nil {
			return nil, cmdline.Usagef("TLS: %v", err)
		}
		// pkg/client's TLS credentials: an error then says when the node
		// asked for a client certificate that was not given.
		opts = append(opts, client.WithTLS(c))
	}
	if e.Opts.Token != "" {
		opts = append(opts, client.WithToken(e.Opts.Token))
	}
	c, err := client.New(context.Background(), []string{e.Opts.Addr}, opts...)
	if err != nil {
		msg := err.Error()
		var ce *client.Error
		if errors.As(err, &ce) {
			msg = ce.Message
		}
		return nil, cmdline.Usagef("invalid --addr %q: %s", e.Opts.Addr, msg)
	}
	e.Client = c
	return c, nil
}

// Context returns the command's base context.
func (e *Env) Context() context.Context {
	if e.Ctx == nil {
		return context.Background()
	}
	return e.Ctx
}

// Close releases the client, if one was made.
func (e *Env) Close() {
	if e.Client != nil {
		_ = e.Client.Close()
		e.Client = nil
	}
}

// RPCContext returns the context of one call: every call has the
// --timeout deadline, within which the client retries what it may.
func (e *Env) RPCContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.Opts.Timeout)
}

// JSON reports whether the command prints with -o json.
func (e *Env) JSON() bool { return e.Opts.Format == render.FormatJSON }

// Do makes the calls of rpc through the client under one --timeout
// deadline.
func (e *Env) Do(rpc func(ctx context.Context, c *client.Client) error) error {
	c, err := e.TaskClient()
	if err != nil {
		return err
	}
	ctx, cancel := e.RPCContext()
	defer cancel()
	return rpc(ctx, c)
}

// Call makes one call of the client under the command's deadline and
// prints its answer: the API's response, as rpc makes it of what the
// client returned, as JSON with -o json, else through table.
func Call[R proto.Message](e *Env, rpc func(context.Context, *client.Client) (R, error), table func(R) error) error {
	var resp R
	err := e.Do(func(ctx context.Context, c *client.Client) error {
		var err error
		resp, err = rpc(ctx, c)
		return err
	})
	if err != nil {
		return err
	}
	if e.JSON() {
		return render.WriteJSON(e.Stdout, resp)
	}
	return table(resp)
}

// CallOne makes the calls of rpc, which answer with one thing — a task, a
// pause, a calendar, an identity — and shows its API form (form makes it
// of a non-nil answer), or with -o json the API's response that resp
// makes of that form.
func CallOne[T, P any](e *Env, rpc func(context.Context, *client.Client) (*T, error), form func(*T) P, resp func(P) proto.Message, show func(io.Writer, P) error) error {
	var p P
	return Call(e, func(ctx context.Context, c *client.Client) (proto.Message, error) {
		got, err := rpc(ctx, c)
		if got != nil {
			p = form(got)
		}
		return resp(p), err
	}, func(proto.Message) error { return show(e.Stdout, p) })
}

// List is the action of a command that takes no argument and prints what
// one call lists: the API's response, as list makes it, through table.
func List[R proto.Message](list func(context.Context, *client.Client) (R, error), table func(io.Writer, R) error) Action {
	return func(e *Env, args []string) error {
		if err := cmdline.NoArgs(args); err != nil {
			return err
		}
		return Call(e, list, func(resp R) error { return table(e.Stdout, resp) })
	}
}

// Protos returns the API's form of each of the items a call of the client
// returned, nil for none.
func Protos[T, P any](items []T, form func(T) P) []P {
	var out []P
	for _, it := range items {
		out = append(out, form(it))
	}
	return out
}

// HintError is an error with advice for the person who runs the command,
// printed after it.
type HintError struct {
	Err  error
	Hint string
}

// Error returns the error followed by the hint.
func (h *HintError) Error() string { return h.Err.Error() + " (" + h.Hint + ")" }

// Unwrap returns the error.
func (h *HintError) Unwrap() error { return h.Err }

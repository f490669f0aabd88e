// Command taskctl is the command-line client of taskd. It talks to any node
// of a taskd cluster over the public gRPC API (proto/taskd/v1), through the
// Go client pkg/client and its retry rules, to schedule, inspect and
// control tasks.
//
// Usage:
//
//	taskctl [--addr HOST:PORT] [-o table|json] [--timeout DUR]
//	        [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] [--token ID.SECRET]
//	        COMMAND [flags] [args]
//
// Run "taskctl help" for the list of commands and "taskctl COMMAND -h" for
// the flags of one command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/taskd/taskd/internal/buildinfo"
	"github.com/taskd/taskd/internal/tlsfiles"
	"github.com/taskd/taskd/pkg/client"
)

// Exit codes of run.
const (
	exitOK    = 0 // the command succeeded, or help was asked for
	exitError = 1 // the command failed (an RPC error, an output error)
	exitUsage = 2 // the command line was wrong
)

const (
	defaultAddr    = "127.0.0.1:7420"
	defaultTimeout = 10 * time.Second
	envAddr        = "TASKCTL_ADDR"
	envTLSCA       = "TASKCTL_TLS_CA"
	envTLSCert     = "TASKCTL_TLS_CERT"
	envTLSKey      = "TASKCTL_TLS_KEY"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// globalOptions are the flags given before the command. The output format
// may also be given after the command.
type globalOptions struct {
	addr string
	// tls names the CA that verifies the node and the client certificate
	// presented to it; any of them set turns TLS on.
	tls tlsfiles.ClientFiles
	// token is the bearer token ID.SECRET sent with every call; empty:
	// none.
	token   string
	format  outputFormat
	timeout time.Duration
	version bool // print the build information and exit
}

// usageError is a mistake on the command line: run reports it with exit
// code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef makes a usageError.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// env is what a command's action works with: the global options, the
// streams and a lazily made client of the node.
type env struct {
	cmd    string
	opts   *globalOptions
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// ctx is the context a command that runs until it is stopped (events
	// -f) ends with; nil is context.Background(). Tests cancel it where a
	// person would press Ctrl-C.
	ctx context.Context

	// client is the client of --addr, made on first use.
	client *client.Client
}

// taskClient returns the client of --addr, creating it on first use. It
// connects with the first call, so that a node that does not answer fails
// that call with the reason the connection gave. Its calls are retried
// and fail over by pkg/client's rules: only what cannot be done twice.
// Tasks scheduled without --idempotency-key are stored without one, as
// asked, and such a schedule is sent once.
func (e *env) taskClient() (*client.Client, error) {
	if e.client != nil {
		return e.client, nil
	}
	opts := []client.Option{client.WithLazyConnect(), client.WithoutGeneratedKeys(), client.WithCallTimeout(e.opts.timeout)}
	if e.opts.tls.Set() {
		c, err := tlsfiles.ClientConfig(e.opts.tls)
		if err != nil {
			return nil, usagef("TLS: %v", err)
		}
		// pkg/client's TLS credentials: an error then says when the node
		// asked for a client certificate that was not given.
		opts = append(opts, client.WithTLS(c))
	}
	if e.opts.token != "" {
		opts = append(opts, client.WithToken(e.opts.token))
	}
	c, err := client.New(context.Background(), []string{e.opts.addr}, opts...)
	if err != nil {
		msg := err.Error()
		var ce *client.Error
		if errors.As(err, &ce) {
			msg = ce.Message
		}
		return nil, usagef("invalid --addr %q: %s", e.opts.addr, msg)
	}
	e.client = c
	return c, nil
}

// context returns the command's base context.
func (e *env) context() context.Context {
	if e.ctx == nil {
		return context.Background()
	}
	return e.ctx
}

// close releases the client, if one was made.
func (e *env) close() {
	if e.client != nil {
		_ = e.client.Close()
		e.client = nil
	}
}

// run is the whole program: it parses args (without the program name),
// runs one command reading the process's stdin (schedule -f -) and writing
// to stdout and stderr, and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runEnv(args, &env{stdin: os.Stdin, stdout: stdout, stderr: stderr})
}

// runEnv is run with the streams of e, and its client if it has one (tests
// give one that steps in between calls); it fills in the rest of e.
func runEnv(args []string, e *env) int {
	stdout, stderr := e.stdout, e.stderr
	opts := &globalOptions{addr: defaultAddr, format: formatTable, timeout: defaultTimeout}
	if a := os.Getenv(envAddr); a != "" {
		opts.addr = a
	}
	opts.tls = tlsfiles.ClientFiles{CA: os.Getenv(envTLSCA), Cert: os.Getenv(envTLSCert), Key: os.Getenv(envTLSKey)}
	opts.token = os.Getenv(envToken)

	gfs := newFlagSet("taskctl")
	defineGlobalFlags(gfs, opts)
	if err := gfs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "taskctl: %v (see 'taskctl help')\n", err)
		return exitUsage
	}
	if opts.timeout <= 0 {
		fmt.Fprintf(stderr, "taskctl: invalid value %q for flag --timeout: must be positive\n", opts.timeout)
		return exitUsage
	}
	if opts.version {
		fmt.Fprintln(stdout, buildinfo.String("taskctl"))
		return exitOK
	}
	rest := gfs.Args()
	if len(rest) == 0 {
		fmt.Fprintln(stderr, "taskctl: missing command (see 'taskctl help')")
		return exitUsage
	}
	if rest[0] == "help" {
		return runHelp(rest[1:], stdout, stderr)
	}
	if isGroup(rest[0]) && (len(rest) == 1 || isHelpFlag(rest[1])) {
		if len(rest) == 1 {
			fmt.Fprintf(stderr, "taskctl: %s: missing command: %s (see 'taskctl help %s')\n", rest[0], strings.Join(groupCommands(rest[0]), ", "), rest[0])
			return exitUsage
		}
		printGroupUsage(stdout, rest[0])
		return exitOK
	}
	cmd, rest := lookupCommandArgs(rest)
	if cmd == nil {
		if isGroup(rest[0]) {
			fmt.Fprintf(stderr, "taskctl: %s: unknown command %q: want %s (see 'taskctl help %s')\n",
				rest[0], rest[1], strings.Join(groupCommands(rest[0]), ", "), rest[0])
		} else {
			fmt.Fprintf(stderr, "taskctl: unknown command %q (see 'taskctl help')\n", rest[0])
		}
		return exitUsage
	}

	fs := newFlagSet(cmd.name)
	fs.Var(&opts.format, "o", "output `format`: table or json")
	fs.Var(&opts.format, "output", "output `format`: table or json (same as -o)")
	act := cmd.define(fs)
	pos, err := parseInterspersed(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandUsage(stdout, cmd, fs)
			return exitOK
		}
		fmt.Fprintf(stderr, "taskctl: %s: %v%s (see 'taskctl %s -h')\n", cmd.name, err, globalFlagHint(err), cmd.name)
		return exitUsage
	}

	e.cmd, e.opts = cmd.name, opts
	defer e.close()
	if err := act(e, pos); err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "taskctl: %s: %v (see 'taskctl %s -h')\n", cmd.name, ue, cmd.name)
			return exitUsage
		}
		fmt.Fprintf(stderr, "taskctl: %s: %s\n", cmd.name, describeError(err, opts))
		return exitError
	}
	return exitOK
}

// defineGlobalFlags registers the flags that come before the command.
func defineGlobalFlags(fs *flag.FlagSet, o *globalOptions) {
	fs.StringVar(&o.addr, "addr", o.addr, "`HOST:PORT` of a taskd node's gRPC API (env "+envAddr+")")
	fs.BoolVar(&o.version, "version", false, "print the build information (module version, VCS revision, Go version) and exit")
	fs.Var(&o.format, "o", "output `format`: table or json")
	fs.Var(&o.format, "output", "output `format`: table or json (same as -o)")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "deadline of every RPC (events streams without one)")
	fs.StringVar(&o.tls.CA, "tls-ca", o.tls.CA, "PEM `FILE` of the CA that signed the node's certificate; any --tls-* flag turns TLS on (env "+envTLSCA+")")
	fs.StringVar(&o.tls.Cert, "tls-cert", o.tls.Cert, "PEM client certificate `FILE`, for a node with --tls-client-ca (env "+envTLSCert+")")
	fs.StringVar(&o.tls.Key, "tls-key", o.tls.Key, "PEM private key `FILE` of --tls-cert (env "+envTLSKey+")")
	fs.StringVar(&o.token, "token", o.token, "bearer `TOKEN` (ID.SECRET) for a node with --tokens-file (env "+envToken+")")
}

// globalFlagHint adds a hint when a global flag was given after the command.
func globalFlagHint(err error) string {
	const prefix = "flag provided but not defined: -"
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return ""
	}
	switch name := strings.TrimLeft(strings.TrimPrefix(msg, prefix), "-"); name {
	case "addr", "timeout", "tls-ca", "tls-cert", "tls-key", "token":
		return fmt.Sprintf("; the global flag --%s goes before the command", name)
	}
	return ""
}

// newFlagSet makes a silent FlagSet: run prints errors and usage itself.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseInterspersed parses fs from args allowing flags after positional
// arguments: the flag package stops at the first positional argument, so the
// remainder is parsed again until nothing is left. Everything after a "--"
// terminator is positional. It returns the positional arguments in order.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if endedByTerminator(fs, args[:len(args)-len(rest)]) {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// endedByTerminator reports whether the flag package stopped parsing
// consumed (the arguments it used up) at a "--" terminator, as opposed to a
// "--" that was the value of a flag. It walks consumed the way the flag
// package does.
func endedByTerminator(fs *flag.FlagSet, consumed []string) bool {
	for i := 0; i < len(consumed); i++ {
		s := consumed[i]
		if s == "--" {
			return i == len(consumed)-1
		}
		name := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		i++ // the flag's value
	}
	return false
}

// runHelp handles "taskctl help [COMMAND]".
func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stdout)
		return exitOK
	}
	if len(args) == 1 && isGroup(args[0]) {
		printGroupUsage(stdout, args[0])
		return exitOK
	}
	cmd, rest := lookupCommandArgs(args)
	if cmd == nil || len(rest) > 0 {
		fmt.Fprintf(stderr, "taskctl: help: unknown command %q (see 'taskctl help')\n", strings.Join(args, " "))
		return exitUsage
	}
	fs := newFlagSet(cmd.name)
	f := formatTable
	fs.Var(&f, "o", "output `format`: table or json")
	fs.Var(&f, "output", "output `format`: table or json (same as -o)")
	cmd.define(fs)
	printCommandUsage(stdout, cmd, fs)
	return exitOK
}

// printUsage writes the program's usage: global flags and every command.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `taskctl is the command-line client of taskd.

Usage:
  taskctl [global flags] COMMAND [flags] [args]

Commands:
`)
	width := len("help")
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-*s  %s\n\nGlobal flags:\n", width, "help", "show this help, or a command's flags with 'taskctl help COMMAND'")
	fs := newFlagSet("taskctl")
	defineGlobalFlags(fs, &globalOptions{addr: defaultAddr, format: formatTable, timeout: defaultTimeout})
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, "\nFlags take one dash or two (-o, --output). Run 'taskctl COMMAND -h' for the flags of a command.\n")
}

// printGroupUsage writes the commands of a group such as calendar.
func printGroupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "Usage:\n  taskctl [global flags] %s COMMAND [flags] [args]\n\nCommands:\n", group)
	for _, c := range commands {
		if sub, ok := strings.CutPrefix(c.name, group+" "); ok {
			fmt.Fprintf(w, "  %-7s %s\n", sub, c.summary)
		}
	}
	fmt.Fprintf(w, "\nRun 'taskctl %s COMMAND -h' for the flags of a command.\n", group)
}

// isHelpFlag reports whether arg asks for help.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "--h":
		return true
	}
	return false
}

// printCommandUsage writes one command's synopsis and flags.
func printCommandUsage(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage:\n  taskctl [global flags] %s %s\n\n%s\n\nFlags:\n", c.name, c.synopsis, c.summary)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

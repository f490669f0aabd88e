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
//
// This package is the dispatch: the global flags, help and usage, the
// table of commands (commands.go), the exit codes and the one line that
// reports a failed command (errors.go). Each command is defined in the
// package of its concept under internal/cli (taskcmd, calendarcmd,
// eventcmd, tokencmd, clustercmd), on the frame of internal/cli/command.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/taskd/taskd/internal/buildinfo"
	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/cli/command"
	"github.com/taskd/taskd/internal/cli/render"
	"github.com/taskd/taskd/internal/tlsfiles"
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
	envToken       = "TASKCTL_TOKEN"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// globalOptions are the flags given before the command: the options a
// command runs with, and --version.
type globalOptions struct {
	command.Options
	version bool // print the build information and exit
}

// run is the whole program: it parses args (without the program name),
// runs one command reading the process's stdin (schedule -f -) and writing
// to stdout and stderr, and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runEnv(args, &command.Env{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr})
}

// runEnv is run with the streams of e, and its client if it has one (tests
// give one that steps in between calls); it fills in the rest of e.
func runEnv(args []string, e *command.Env) int {
	stdout, stderr := e.Stdout, e.Stderr
	opts := defaultOptions()
	if a := os.Getenv(envAddr); a != "" {
		opts.Addr = a
	}
	opts.TLS = tlsfiles.ClientFiles{CA: os.Getenv(envTLSCA), Cert: os.Getenv(envTLSCert), Key: os.Getenv(envTLSKey)}
	opts.Token = os.Getenv(envToken)

	gfs := cmdline.NewFlagSet("taskctl")
	defineGlobalFlags(gfs, opts)
	if err := gfs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "taskctl: %v (see 'taskctl help')\n", err)
		return exitUsage
	}
	if opts.Timeout <= 0 {
		fmt.Fprintf(stderr, "taskctl: invalid value %q for flag --timeout: must be positive\n", opts.Timeout)
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

	fs := cmdline.NewFlagSet(cmd.Name)
	defineFormatFlags(fs, &opts.Format)
	act := cmd.Define(fs)
	pos, err := cmdline.ParseInterspersed(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandUsage(stdout, cmd, fs)
			return exitOK
		}
		fmt.Fprintf(stderr, "taskctl: %s: %v%s (see 'taskctl %s -h')\n", cmd.Name, err, globalFlagHint(err), cmd.Name)
		return exitUsage
	}

	e.Cmd, e.Opts = cmd.Name, &opts.Options
	defer e.Close()
	if err := act(e, pos); err != nil {
		var ue *cmdline.UsageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "taskctl: %s: %v (see 'taskctl %s -h')\n", cmd.Name, ue, cmd.Name)
			return exitUsage
		}
		fmt.Fprintf(stderr, "taskctl: %s: %s\n", cmd.Name, describeError(err, &opts.Options))
		return exitError
	}
	return exitOK
}

// defineGlobalFlags registers the flags that come before the command.
func defineGlobalFlags(fs *flag.FlagSet, o *globalOptions) {
	fs.StringVar(&o.Addr, "addr", o.Addr, "`HOST:PORT` of a taskd node's gRPC API (env "+envAddr+")")
	fs.BoolVar(&o.version, "version", false, "print the build information (module version, VCS revision, Go version) and exit")
	defineFormatFlags(fs, &o.Format)
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "deadline of every RPC (events streams without one)")
	fs.StringVar(&o.TLS.CA, "tls-ca", o.TLS.CA, "PEM `FILE` of the CA that signed the node's certificate; any --tls-* flag turns TLS on (env "+envTLSCA+")")
	fs.StringVar(&o.TLS.Cert, "tls-cert", o.TLS.Cert, "PEM client certificate `FILE`, for a node with --tls-client-ca (env "+envTLSCert+")")
	fs.StringVar(&o.TLS.Key, "tls-key", o.TLS.Key, "PEM private key `FILE` of --tls-cert (env "+envTLSKey+")")
	fs.StringVar(&o.Token, "token", o.Token, "bearer `TOKEN` (ID.SECRET) for a node with --tokens-file (env "+envToken+")")
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

// defineFormatFlags registers -o and --output, which may be given before
// the command or after it.
func defineFormatFlags(fs *flag.FlagSet, f *render.Format) {
	fs.Var(f, "o", "output `format`: table or json")
	fs.Var(f, "output", "output `format`: table or json (same as -o)")
}

// defaultOptions are the global options before the flags and the
// environment are read.
func defaultOptions() *globalOptions {
	return &globalOptions{Options: command.Options{Addr: defaultAddr, Format: render.FormatTable, Timeout: defaultTimeout}}
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
	fs := cmdline.NewFlagSet(cmd.Name)
	f := render.FormatTable
	defineFormatFlags(fs, &f)
	cmd.Define(fs)
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
		width = max(width, len(c.Name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name, c.Summary)
	}
	fmt.Fprintf(w, "  %-*s  %s\n\nGlobal flags:\n", width, "help", "show this help, or a command's flags with 'taskctl help COMMAND'")
	fs := cmdline.NewFlagSet("taskctl")
	defineGlobalFlags(fs, defaultOptions())
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, "\nFlags take one dash or two (-o, --output). Run 'taskctl COMMAND -h' for the flags of a command.\n")
}

// printGroupUsage writes the commands of a group such as calendar.
func printGroupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "Usage:\n  taskctl [global flags] %s COMMAND [flags] [args]\n\nCommands:\n", group)
	for _, c := range commands {
		if sub, ok := strings.CutPrefix(c.Name, group+" "); ok {
			fmt.Fprintf(w, "  %-7s %s\n", sub, c.Summary)
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
func printCommandUsage(w io.Writer, c *command.Command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage:\n  taskctl [global flags] %s %s\n\n%s\n\nFlags:\n", c.Name, c.Synopsis, c.Summary)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

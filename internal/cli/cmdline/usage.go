// Package cmdline holds the rules of taskctl's command line that every
// command shares: the usage error (a mistake on the command line, which
// taskctl reports with exit code 2), flag sets that take flags among the
// positional arguments, repeatable and given-or-not flags, the -f FILE
// flag of commands that read their whole input from a file, and the
// checks of positional arguments and required flags. It knows nothing of
// taskd's API. No lock.
package cmdline

import "fmt"

// UsageError is a mistake on the command line: taskctl reports it with
// exit code 2.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// Usagef makes a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// NoArgs fails when a command that takes no positional argument got some.
func NoArgs(args []string) error {
	if len(args) > 0 {
		return Usagef("unexpected argument %q", args[0])
	}
	return nil
}

// RequireFlag fails when a required flag is empty.
func RequireFlag(name, value string) error {
	if value == "" {
		return Usagef("missing required flag --%s", name)
	}
	return nil
}

// ArgOrFlag resolves the one positional argument of a command that may be
// given instead as the flag called name (flagValue): what names it in the
// errors, arg is its name in the usage line (TASK_ID).
func ArgOrFlag(what, arg, name, flagValue string, args []string) (string, error) {
	if len(args) > 1 {
		return "", Usagef("unexpected argument %q", args[1])
	}
	if len(args) == 1 {
		if flagValue != "" && flagValue != args[0] {
			return "", Usagef("%s given twice: %q and --%s %q", what, args[0], name, flagValue)
		}
		return args[0], nil
	}
	if flagValue == "" {
		return "", Usagef("missing %s (give %s or --%s)", what, arg, name)
	}
	return flagValue, nil
}

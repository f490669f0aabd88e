package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is the schedule command: its flags, and the request they make.

// scheduleOptions holds the schedule command's flags as given; zero values
// mean "not given".
type scheduleOptions struct {
	Identity       string
	Kind           string
	Scope          string
	NonDurable     bool
	IdempotencyKey string
	File           string // -f: a batch of TaskSpecs in JSON
	triggerOptions
	specOptions
}

// stringList is a repeatable string flag.
type stringList []string

// String returns the values joined by commas.
func (l *stringList) String() string { return strings.Join(*l, ",") }

// Set appends one value.
func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// defineScheduleFlags registers the schedule command's flags into o.
func defineScheduleFlags(fs *flag.FlagSet, o *scheduleOptions) {
	fs.StringVar(&o.Identity, "identity", "", "`ID` of the identity that owns the task (required)")
	fs.StringVar(&o.Kind, "kind", "", "`KIND` of handler that runs the task (required)")
	fs.StringVar(&o.Scope, "scope", "", "`SCOPE` where the task runs: identity or every-node (required)")
	defineTriggerFlags(fs, &o.triggerOptions, true)
	defineSpecFlags(fs, &o.specOptions)
	fs.BoolVar(&o.NonDurable, "non-durable", false, "never persist the task: it runs on the node that accepts it and is lost if that node stops")
	fs.StringVar(&o.IdempotencyKey, "idempotency-key", "", "`KEY` that makes scheduling twice return the first task")
	fs.StringVar(&o.File, "f", "", "schedule the tasks in the JSON `FILE` instead: an array of TaskSpecs or {\"tasks\": [...]}; - reads stdin")
	fs.StringVar(&o.File, "file", "", "same as -f (`FILE`)")
}

// defineSchedule defines the schedule command.
func defineSchedule(fs *flag.FlagSet) action {
	o := &scheduleOptions{}
	defineScheduleFlags(fs, o)
	return func(e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if o.File != "" || flagGiven(fs, "f") || flagGiven(fs, "file") {
			if o.File == "" {
				return usagef("invalid value \"\" for flag -f: want a file name, or - for stdin")
			}
			if other := otherFlag(fs, "f", "file", "o", "output"); other != "" {
				return usagef("--%s cannot be combined with -f: the file holds whole tasks", other)
			}
			return scheduleFile(e, o.File)
		}
		req, err := buildScheduleRequest(*o, time.Now())
		if err != nil {
			return err
		}
		c, err := e.taskClient()
		if err != nil {
			return err
		}
		ctx, cancel := e.rpcContext()
		defer cancel()
		task, existing, err := c.Schedule(ctx, client.TaskSpec{Proto: req.GetTask()})
		if err != nil {
			return err
		}
		if e.opts.format == formatJSON {
			return writeJSON(e.stdout, &taskdv1.ScheduleTaskResponse{Task: task.Proto, Existing: existing})
		}
		_, err = fmt.Fprintln(e.stdout, task.ID)
		return err
	}
}

// flagGiven reports whether the flag called name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

// otherFlag returns the first flag set on the command line that is not one
// of allowed, or "".
func otherFlag(fs *flag.FlagSet, allowed ...string) string {
	other := ""
	fs.Visit(func(f *flag.Flag) {
		if other == "" && !slices.Contains(allowed, f.Name) {
			other = f.Name
		}
	})
	return other
}

// parseScope maps the --scope value to a Scope. It accepts identity and
// every-node in any case, with - or _.
func parseScope(s string) (taskdv1.Scope, error) {
	switch strings.ReplaceAll(strings.ToLower(s), "_", "-") {
	case "":
		return 0, usagef("missing required flag --scope (identity or every-node)")
	case "identity":
		return taskdv1.Scope_SCOPE_IDENTITY, nil
	case "every-node":
		return taskdv1.Scope_SCOPE_EVERY_NODE, nil
	}
	return 0, usagef("invalid value %q for flag --scope: want identity or every-node", s)
}

// parseTimeFlag parses an RFC3339 flag value; empty gives nil.
func parseTimeFlag(name, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, usagef("invalid value %q for flag --%s: want an RFC3339 time such as 2026-01-02T15:04:05Z", v, name)
	}
	return &t, nil
}

// parseDurationFlag parses a duration flag value; empty gives 0 and false.
// A negative duration is refused; so is zero when positive is set.
func parseDurationFlag(name, v string, positive bool) (time.Duration, bool, error) {
	if v == "" {
		return 0, false, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, false, usagef("invalid value %q for flag --%s: want a duration such as 90s or 1h30m", v, name)
	}
	if d < 0 || (positive && d == 0) {
		return 0, false, usagef("invalid value %q for flag --%s: must be positive", v, name)
	}
	return d, true, nil
}

// buildScheduleRequest turns the schedule flags into a ScheduleTaskRequest.
// now is the client's clock, used only to turn --delay into a periodic start.
// Every error is a usageError naming the flag.
//
// The triggers are those of buildTriggers; with no trigger flag at all, the
// request has none and the server gives the task its default trigger
// (once, now), the same for every client.
func buildScheduleRequest(o scheduleOptions, now time.Time) (*taskdv1.ScheduleTaskRequest, error) {
	if err := requireFlag("identity", o.Identity); err != nil {
		return nil, err
	}
	if err := requireFlag("kind", o.Kind); err != nil {
		return nil, err
	}
	scope, err := parseScope(o.Scope)
	if err != nil {
		return nil, err
	}
	spec := &taskdv1.TaskSpec{
		Identity:       o.Identity,
		Kind:           o.Kind,
		Scope:          scope,
		NonDurable:     o.NonDurable,
		IdempotencyKey: o.IdempotencyKey,
	}
	triggers, err := buildTriggers(o.triggerOptions, now)
	if err != nil {
		return nil, err
	}
	spec.Triggers = triggers
	if err := applySpecOptions(spec, o.specOptions, func(string) bool { return true }); err != nil {
		return nil, err
	}
	return &taskdv1.ScheduleTaskRequest{Task: spec}, nil
}

// Package calendarcmd holds taskctl's calendar commands: create (from
// flags that give a calendar its one rule, or from a JSON file), get, list
// and delete of the named exclusion calendars that tasks list with
// --calendar. Its calls go through pkg/client, its output through
// internal/cli/render. No lock.
package calendarcmd

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

// Create defines calendar create: it creates (or with --replace replaces)
// the calendar of its flags or -f file, and shows it.
func Create(fs *flag.FlagSet) command.Action {
	o := &calendarOptions{}
	defineCalendarCreateFlags(fs, o)
	return func(e *command.Env, args []string) error {
		if len(args) > 1 {
			return cmdline.Usagef("unexpected argument %q", args[1])
		}
		name := ""
		if len(args) == 1 {
			name = args[0]
		}
		req, err := createRequest(e, fs, name, o)
		if err != nil {
			return err
		}
		return calendarCall(e, func(ctx context.Context, c *client.Client) (*client.Calendar, error) {
			// The calendar as the API spells it: a -f file's is sent as read.
			return c.CreateCalendar(ctx, client.Calendar{Proto: req.GetCalendar()}, req.GetReplace())
		}, func(cal *taskdv1.Calendar) proto.Message { return &taskdv1.CreateCalendarResponse{Calendar: cal} })
	}
}

// createRequest is the request of calendar create: the calendar of the -f
// file, named by it or by NAME, or the one the flags make.
func createRequest(e *command.Env, fs *flag.FlagSet, name string, o *calendarOptions) (*taskdv1.CreateCalendarRequest, error) {
	file, err := cmdline.FileGiven(fs, o.File, "the whole calendar", "replace")
	if err != nil {
		return nil, err
	}
	if !file {
		return buildCalendarRequest(name, *o, func(n string) bool { return cmdline.FlagGiven(fs, n) })
	}
	c, err := readCalendarFile(e.Stdin, o.File)
	if err != nil {
		return nil, err
	}
	switch {
	case name != "" && c.GetName() != "" && name != c.GetName():
		return nil, cmdline.Usagef("calendar name given twice: %q and %q in the -f file", name, c.GetName())
	case name != "":
		c.Name = name
	case c.GetName() == "":
		return nil, cmdline.Usagef("missing calendar NAME: the -f file has no name")
	}
	return &taskdv1.CreateCalendarRequest{Calendar: c, Replace: o.Replace}, nil
}

// calendarName resolves the one NAME argument of calendar get and delete.
func calendarName(args []string) (string, error) {
	switch {
	case len(args) == 0:
		return "", cmdline.Usagef("missing calendar NAME")
	case len(args) > 1:
		return "", cmdline.Usagef("unexpected argument %q", args[1])
	}
	return args[0], nil
}

// calendarCall makes the call of rpc, which answers with a calendar, and
// shows the calendar, or with -o json the API's response that resp makes
// of it.
func calendarCall(e *command.Env, rpc func(context.Context, *client.Client) (*client.Calendar, error), resp func(*taskdv1.Calendar) proto.Message) error {
	return command.CallOne(e, rpc, func(c *client.Calendar) *taskdv1.Calendar { return c.Proto }, resp, render.WriteCalendarDetail)
}

// Get defines calendar get: it shows a calendar.
func Get(*flag.FlagSet) command.Action {
	return func(e *command.Env, args []string) error {
		name, err := calendarName(args)
		if err != nil {
			return err
		}
		return calendarCall(e, func(ctx context.Context, c *client.Client) (*client.Calendar, error) {
			return c.Calendar(ctx, name)
		}, func(cal *taskdv1.Calendar) proto.Message { return &taskdv1.GetCalendarResponse{Calendar: cal} })
	}
}

// List defines calendar list: it lists the calendars.
func List(*flag.FlagSet) command.Action {
	return command.List(func(ctx context.Context, c *client.Client) (*taskdv1.ListCalendarsResponse, error) {
		cals, err := c.Calendars(ctx)
		return &taskdv1.ListCalendarsResponse{Calendars: command.Protos(cals, func(c client.Calendar) *taskdv1.Calendar { return c.Proto })}, err
	}, func(w io.Writer, resp *taskdv1.ListCalendarsResponse) error {
		return render.WriteCalendarsTable(w, resp.GetCalendars())
	})
}

// Delete defines calendar delete: it deletes a calendar that no task and
// no calendar uses.
func Delete(*flag.FlagSet) command.Action {
	return func(e *command.Env, args []string) error {
		name, err := calendarName(args)
		if err != nil {
			return err
		}
		return command.Call(e, func(ctx context.Context, c *client.Client) (*taskdv1.DeleteCalendarResponse, error) {
			return &taskdv1.DeleteCalendarResponse{}, c.DeleteCalendar(ctx, name)
		}, func(*taskdv1.DeleteCalendarResponse) error {
			_, err := fmt.Fprintf(e.Stdout, "calendar %s deleted\n", name)
			return err
		})
	}
}

package main

import (
	"strings"

	"github.com/taskd/taskd/internal/cli/calendarcmd"
	"github.com/taskd/taskd/internal/cli/clustercmd"
	"github.com/taskd/taskd/internal/cli/command"
	"github.com/taskd/taskd/internal/cli/eventcmd"
	"github.com/taskd/taskd/internal/cli/taskcmd"
	"github.com/taskd/taskd/internal/cli/tokencmd"
)

// This file is the table of taskctl's commands, each defined in the
// package of its concept under internal/cli, and how a command line names
// one.

// commands lists every subcommand, in the order help shows them.
var commands = []*command.Command{
	{
		Name:     "schedule",
		Synopsis: "--identity ID --kind KIND --scope identity|every-node [flags] | -f FILE",
		Summary:  "schedule a task (or the tasks of a JSON file) and print its id",
		Define:   taskcmd.Schedule,
	},
	{
		Name:     "update",
		Synopsis: "--identity ID TASK_ID [trigger flags] [settings]",
		Summary:  "change a task's triggers or settings, keeping its id and history",
		Define:   taskcmd.Update,
	},
	{
		Name:     "trigger add",
		Synopsis: "--identity ID TASK_ID [--name NAME] (--cron EXPR | --every DUR | --at T | --delay DUR | --on-startup ...) [--revision N]",
		Summary:  "add a trigger to a task, keeping its other triggers and their progress",
		Define:   taskcmd.TriggerAdd,
	},
	{
		Name:     "trigger remove",
		Synopsis: "--identity ID TASK_ID NAME... [--revision N]",
		Summary:  "remove triggers of a task by name (get shows them), keeping the others",
		Define:   taskcmd.TriggerRemove,
	},
	{
		Name:     "get",
		Synopsis: "--identity ID TASK_ID",
		Summary:  "show a task",
		Define:   taskcmd.Get,
	},
	{
		Name:     "cancel",
		Synopsis: "--identity ID TASK_ID",
		Summary:  "cancel a task's future runs",
		Define:   taskcmd.Cancel,
	},
	{
		Name:     "delete",
		Synopsis: "--identity ID TASK_ID",
		Summary:  "delete a finished (completed, dead or cancelled) task and its history at once",
		Define:   taskcmd.Delete,
	},
	{
		Name:     "run-now",
		Synopsis: "--identity ID TASK_ID",
		Summary:  "run a task once at once, leaving its schedule as it was",
		Define:   taskcmd.RunNow,
	},
	{
		Name:     "runs",
		Synopsis: "--identity ID TASK_ID",
		Summary:  "list a task's run history, newest first",
		Define:   taskcmd.Runs,
	},
	{
		Name:     "list",
		Synopsis: "[--identity ID] [--state S]... [--kind KIND] [--label k=v]... [--node NODE] [--page-size N] [--page-token TOKEN | --all]",
		Summary:  "list an identity's tasks in creation order, or the cluster's",
		Define:   taskcmd.List,
	},
	{
		Name:     "pause",
		Synopsis: "--identity ID [TASK_ID] | --kind KIND",
		Summary:  "pause a task, every task of an identity, or every task of a kind",
		Define:   taskcmd.Pause,
	},
	{
		Name:     "resume",
		Synopsis: "--identity ID [TASK_ID] | --kind KIND",
		Summary:  "lift a pause of a task, an identity or a kind",
		Define:   taskcmd.Resume,
	},
	{
		Name:     "pauses",
		Synopsis: "",
		Summary:  "list the identity and kind pauses in force",
		Define:   taskcmd.Pauses,
	},
	{
		Name:     "preview",
		Synopsis: "--cron EXPR [--tz ZONE] | --every DUR [--start T] | --at T ... [--calendar NAME]... [--from T] [-n N]",
		Summary:  "show the next fire times of triggers, without scheduling anything",
		Define:   taskcmd.Preview,
	},
	{
		Name:     "calendar create",
		Synopsis: "NAME (--weekly DAYS | --dates DAYS | --annual DAYS | --monthly DAYS | --daily START-END [--invert] | --cron EXPR) [--tz ZONE] [--base NAME] [--description TEXT] [--replace] | -f FILE [--replace]",
		Summary:  "create (or with --replace, replace) an exclusion calendar",
		Define:   calendarcmd.Create,
	},
	{
		Name:     "calendar get",
		Synopsis: "NAME",
		Summary:  "show a calendar",
		Define:   calendarcmd.Get,
	},
	{
		Name:     "calendar list",
		Synopsis: "",
		Summary:  "list the calendars",
		Define:   calendarcmd.List,
	},
	{
		Name:     "calendar delete",
		Synopsis: "NAME",
		Summary:  "delete a calendar that no task and no calendar uses",
		Define:   calendarcmd.Delete,
	},
	{
		Name:     "events",
		Synopsis: "[--identity ID] [--task TASK_ID] [--kind KIND] [--node NODE] [--type TYPES] (--cursor CURSOR [--idle DUR] | -f [--cursor CURSOR])",
		Summary:  "print task events: those after a cursor, or (-f) as they happen",
		Define:   eventcmd.Events,
	},
	{
		Name:     "token create",
		Synopsis: "--verbs VERBS [--identities SCOPES] [--id ID] [--description TEXT] [--offline]",
		Summary:  "store a bearer token in the cluster (admin) and print it once; --offline: make one for a --tokens-file",
		Define:   tokencmd.Create,
	},
	{
		Name:     "token list",
		Synopsis: "",
		Summary:  "list the tokens stored in the cluster and those of the node's tokens file (admin)",
		Define:   tokencmd.List,
	},
	{
		Name:     "token revoke",
		Synopsis: "ID",
		Summary:  "revoke a token stored in the cluster (admin)",
		Define:   tokencmd.Revoke,
	},
	{
		Name:     "nodes",
		Synopsis: "",
		Summary:  "list the registered nodes of the cluster",
		Define:   clustercmd.Nodes,
	},
	{
		Name:     "identity",
		Synopsis: "ID",
		Summary:  "show where an identity is mapped, its status and how many tasks it has",
		Define:   clustercmd.Identity,
	},
	{
		Name:     "move",
		Synopsis: "ID --to NODE",
		Summary:  "move an identity (and its tasks) to a RUNNING node",
		Define:   clustercmd.Move,
	},
	{
		Name:     "drain",
		Synopsis: "NODE",
		Summary:  "drain a node: hand its identities to other nodes, then stop it",
		Define:   clustercmd.Drain,
	},
}

// lookupCommand returns the command called name, or nil.
func lookupCommand(name string) *command.Command {
	for _, c := range commands {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// A command's name may be two words, "calendar create": the first names a
// group of commands that act on one kind of thing.

// isGroup reports whether name is the first word of two-word commands.
func isGroup(name string) bool { return len(groupCommands(name)) > 0 }

// groupCommands returns the second words of the commands of group.
func groupCommands(group string) []string {
	var subs []string
	for _, c := range commands {
		if sub, ok := strings.CutPrefix(c.Name, group+" "); ok {
			subs = append(subs, sub)
		}
	}
	return subs
}

// lookupCommandArgs finds the command named by the first word of args, or
// by the first two for a group, and returns it with the rest of args; it
// returns nil and args unchanged when there is none.
func lookupCommandArgs(args []string) (*command.Command, []string) {
	if isGroup(args[0]) && len(args) > 1 {
		if c := lookupCommand(args[0] + " " + args[1]); c != nil {
			return c, args[2:]
		}
		return nil, args
	}
	if c := lookupCommand(args[0]); c != nil {
		return c, args[1:]
	}
	return nil, args
}

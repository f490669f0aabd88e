package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// action runs a command once its flags are parsed; args are the positional
// arguments.
type action func(e *env, args []string) error

// command is one subcommand of taskctl.
type command struct {
	name     string
	synopsis string // flags and arguments, for the usage line
	summary  string
	// define registers the command's flags on fs and returns the action,
	// which reads the parsed flag values.
	define func(fs *flag.FlagSet) action
}

// commands lists every subcommand, in the order help shows them.
var commands = []*command{
	{
		name:     "schedule",
		synopsis: "--identity ID --kind KIND --scope identity|every-node [flags] | -f FILE",
		summary:  "schedule a task (or the tasks of a JSON file) and print its id",
		define:   defineSchedule,
	},
	{
		name:     "update",
		synopsis: "--identity ID TASK_ID [trigger flags] [settings]",
		summary:  "change a task's triggers or settings, keeping its id and history",
		define:   defineUpdate,
	},
	{
		name:     "trigger add",
		synopsis: "--identity ID TASK_ID [--name NAME] (--cron EXPR | --every DUR | --at T | --delay DUR | --on-startup ...) [--revision N]",
		summary:  "add a trigger to a task, keeping its other triggers and their progress",
		define:   defineTriggerAdd,
	},
	{
		name:     "trigger remove",
		synopsis: "--identity ID TASK_ID NAME... [--revision N]",
		summary:  "remove triggers of a task by name (get shows them), keeping the others",
		define:   defineTriggerRemove,
	},
	{
		name:     "get",
		synopsis: "--identity ID TASK_ID",
		summary:  "show a task",
		define: taskCommand(func(ctx context.Context, c *client.Client, id, task string) (*taskdv1.Task, proto.Message, error) {
			t, err := c.Get(ctx, id, task)
			return taskProto(t), &taskdv1.GetTaskResponse{Task: taskProto(t)}, err
		}),
	},
	{
		name:     "cancel",
		synopsis: "--identity ID TASK_ID",
		summary:  "cancel a task's future runs",
		define: taskCommand(func(ctx context.Context, c *client.Client, id, task string) (*taskdv1.Task, proto.Message, error) {
			t, err := c.Cancel(ctx, id, task)
			return taskProto(t), &taskdv1.CancelTaskResponse{Task: taskProto(t)}, err
		}),
	},
	{
		name:     "delete",
		synopsis: "--identity ID TASK_ID",
		summary:  "delete a finished (completed, dead or cancelled) task and its history at once",
		define:   defineDelete,
	},
	{
		name:     "run-now",
		synopsis: "--identity ID TASK_ID",
		summary:  "run a task once at once, leaving its schedule as it was",
		define: taskCommand(func(ctx context.Context, c *client.Client, id, task string) (*taskdv1.Task, proto.Message, error) {
			t, err := c.RunNow(ctx, id, task)
			return taskProto(t), &taskdv1.RunTaskNowResponse{Task: taskProto(t)}, err
		}),
	},
	{
		name:     "runs",
		synopsis: "--identity ID TASK_ID",
		summary:  "list a task's run history, newest first",
		define:   defineRuns,
	},
	{
		name:     "list",
		synopsis: "[--identity ID] [--state S]... [--kind KIND] [--label k=v]... [--node NODE] [--page-size N] [--page-token TOKEN | --all]",
		summary:  "list an identity's tasks in creation order, or the cluster's",
		define:   defineList,
	},
	{
		name:     "pause",
		synopsis: "--identity ID [TASK_ID] | --kind KIND",
		summary:  "pause a task, every task of an identity, or every task of a kind",
		define:   definePause,
	},
	{
		name:     "resume",
		synopsis: "--identity ID [TASK_ID] | --kind KIND",
		summary:  "lift a pause of a task, an identity or a kind",
		define:   defineResume,
	},
	{
		name:     "pauses",
		synopsis: "",
		summary:  "list the identity and kind pauses in force",
		define:   definePauses,
	},
	{
		name:     "preview",
		synopsis: "--cron EXPR [--tz ZONE] | --every DUR [--start T] | --at T ... [--calendar NAME]... [--from T] [-n N]",
		summary:  "show the next fire times of triggers, without scheduling anything",
		define:   definePreview,
	},
	{
		name:     "calendar create",
		synopsis: "NAME (--weekly DAYS | --dates DAYS | --annual DAYS | --monthly DAYS | --daily START-END [--invert] | --cron EXPR) [--tz ZONE] [--base NAME] [--description TEXT] [--replace] | -f FILE [--replace]",
		summary:  "create (or with --replace, replace) an exclusion calendar",
		define:   defineCalendarCreate,
	},
	{
		name:     "calendar get",
		synopsis: "NAME",
		summary:  "show a calendar",
		define:   defineCalendarGet,
	},
	{
		name:     "calendar list",
		synopsis: "",
		summary:  "list the calendars",
		define:   defineCalendarList,
	},
	{
		name:     "calendar delete",
		synopsis: "NAME",
		summary:  "delete a calendar that no task and no calendar uses",
		define:   defineCalendarDelete,
	},
	{
		name:     "events",
		synopsis: "[--identity ID] [--task TASK_ID] [--kind KIND] [--node NODE] [--type TYPES] (--cursor CURSOR [--idle DUR] | -f [--cursor CURSOR])",
		summary:  "print task events: those after a cursor, or (-f) as they happen",
		define:   defineEvents,
	},
	{
		name:     "token create",
		synopsis: "--verbs VERBS [--identities SCOPES] [--id ID] [--description TEXT] [--offline]",
		summary:  "store a bearer token in the cluster (admin) and print it once; --offline: make one for a --tokens-file",
		define:   defineTokenCreate,
	},
	{
		name:     "token list",
		synopsis: "",
		summary:  "list the tokens stored in the cluster and those of the node's tokens file (admin)",
		define:   defineTokenList,
	},
	{
		name:     "token revoke",
		synopsis: "ID",
		summary:  "revoke a token stored in the cluster (admin)",
		define:   defineTokenRevoke,
	},
	{
		name:     "nodes",
		synopsis: "",
		summary:  "list the registered nodes of the cluster",
		define:   defineNodes,
	},
	{
		name:     "identity",
		synopsis: "ID",
		summary:  "show where an identity is mapped, its status and how many tasks it has",
		define:   defineIdentity,
	},
	{
		name:     "move",
		synopsis: "ID --to NODE",
		summary:  "move an identity (and its tasks) to a RUNNING node",
		define:   defineMove,
	},
	{
		name:     "drain",
		synopsis: "NODE",
		summary:  "drain a node: hand its identities to other nodes, then stop it",
		define:   defineDrain,
	},
}

// lookupCommand returns the command called name, or nil.
func lookupCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
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
		if sub, ok := strings.CutPrefix(c.name, group+" "); ok {
			subs = append(subs, sub)
		}
	}
	return subs
}

// lookupCommandArgs finds the command named by the first word of args, or
// by the first two for a group, and returns it with the rest of args; it
// returns nil and args unchanged when there is none.
func lookupCommandArgs(args []string) (*command, []string) {
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

// rpcContext returns the context of one call: every call has the --timeout
// deadline, within which the client retries what it may.
func (e *env) rpcContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.opts.timeout)
}

// noArgs fails when a command that takes no positional argument got some.
func noArgs(args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// requireFlag fails when a required flag is empty.
func requireFlag(name, value string) error {
	if value == "" {
		return usagef("missing required flag --%s", name)
	}
	return nil
}

// taskID resolves the task id from the positional arguments or --task.
func taskID(flagValue string, args []string) (string, error) {
	if len(args) > 1 {
		return "", usagef("unexpected argument %q", args[1])
	}
	if len(args) == 1 {
		if flagValue != "" && flagValue != args[0] {
			return "", usagef("task id given twice: %q and --task %q", args[0], flagValue)
		}
		return args[0], nil
	}
	if flagValue == "" {
		return "", usagef("missing task id (give TASK_ID or --task)")
	}
	return flagValue, nil
}

// taskRefFlags registers the flags that name one task, --identity ID
// (required) and TASK_ID or --task ID, and returns the function that
// resolves them from the positional arguments.
func taskRefFlags(fs *flag.FlagSet) func(args []string) (identity, task string, err error) {
	identity := fs.String("identity", "", "`ID` of the identity that owns the task (required)")
	taskFlag := fs.String("task", "", "task `ID` (instead of the TASK_ID argument)")
	return func(args []string) (string, string, error) {
		id, err := taskID(*taskFlag, args)
		if err != nil {
			return "", "", err
		}
		if err := requireFlag("identity", *identity); err != nil {
			return "", "", err
		}
		return *identity, id, nil
	}
}

// taskCommand makes the define function of a command that names one task
// and answers with it (get, cancel, run-now): call returns the task and the
// API's response, which -o json prints.
func taskCommand(call func(ctx context.Context, c *client.Client, identity, task string) (*taskdv1.Task, proto.Message, error)) func(fs *flag.FlagSet) action {
	return func(fs *flag.FlagSet) action {
		ref := taskRefFlags(fs)
		return func(e *env, args []string) error {
			identity, id, err := ref(args)
			if err != nil {
				return err
			}
			c, err := e.taskClient()
			if err != nil {
				return err
			}
			ctx, cancel := e.rpcContext()
			defer cancel()
			task, resp, err := call(ctx, c, identity, id)
			if err != nil {
				return err
			}
			if e.opts.format == formatJSON {
				return writeJSON(e.stdout, resp)
			}
			return writeTaskDetail(e.stdout, task)
		}
	}
}

// defineRuns defines the runs command.
func defineRuns(fs *flag.FlagSet) action {
	ref := taskRefFlags(fs)
	return func(e *env, args []string) error {
		identity, id, err := ref(args)
		if err != nil {
			return err
		}
		return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.ListRunsResponse, error) {
			runs, err := c.Runs(ctx, identity, id)
			resp := &taskdv1.ListRunsResponse{}
			for _, r := range runs {
				resp.Runs = append(resp.Runs, r.Proto)
			}
			return resp, err
		}, func(resp *taskdv1.ListRunsResponse) error {
			return writeRunsTable(e.stdout, resp.GetRuns())
		})
	}
}

// defineList defines the list command.
func defineList(fs *flag.FlagSet) action {
	identity := fs.String("identity", "", "`ID` of the identity whose tasks to list (default: every identity's)")
	var states, labels stringList
	fs.Var(&states, "state", "keep tasks in `STATE`: scheduled, running, retrying, paused, completed, dead, canceled (repeatable)")
	kind := fs.String("kind", "", "keep tasks of `KIND`")
	fs.Var(&labels, "label", "keep tasks with the label `k=v` (repeatable: all of them)")
	node := fs.String("node", "", "keep tasks of the identities `NODE` owns, and every-node tasks")
	pageSize := fs.Int("page-size", 0, "tasks per page, 1-1000 (`N`; 0: the server's default of 100)")
	pageToken := fs.String("page-token", "", "`TOKEN` of the page to show, from an earlier answer")
	all := fs.Bool("all", false, "follow the page tokens and list every task")
	return func(e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		req, err := buildListRequest(*identity, states, *kind, labels, *node, *pageSize, *pageToken)
		if err != nil {
			return err
		}
		if *all && *pageToken != "" {
			return usagef("--all and --page-token exclude each other")
		}
		c, err := e.taskClient()
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
		if e.opts.format == formatJSON {
			return writeJSON(e.stdout, out)
		}
		if err := writeTasksTable(e.stdout, out.GetTasks(), *identity == ""); err != nil {
			return err
		}
		if out.NextPageToken != "" {
			fmt.Fprintf(e.stderr, "taskctl: list: more tasks may follow: use --all, or --page-token %s\n", out.NextPageToken)
		}
		return nil
	}
}

// buildListRequest turns the list flags into a ListTasksRequest. Every
// error is a usageError naming the flag.
func buildListRequest(identity string, states []string, kind string, labels []string, node string, pageSize int, pageToken string) (*taskdv1.ListTasksRequest, error) {
	if pageSize < 0 || pageSize > 1000 {
		return nil, usagef("invalid value %d for flag --page-size: must be between 0 and 1000", pageSize)
	}
	req := &taskdv1.ListTasksRequest{Identity: identity, Kind: kind, Node: node, PageSize: int32(pageSize), PageToken: pageToken}
	for _, v := range states {
		st, err := parseState(v)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(req.States, st) {
			req.States = append(req.States, st)
		}
	}
	var err error
	if req.Labels, err = parseLabels("label", labels); err != nil {
		return nil, err
	}
	return req, nil
}

// listPage fetches the page of req under its own deadline.
func listPage(e *env, c *client.Client, req *taskdv1.ListTasksRequest) (*taskdv1.ListTasksResponse, error) {
	ctx, cancel := e.rpcContext()
	defer cancel()
	f := client.ListFilter{Identity: req.GetIdentity(), Kind: req.GetKind(), Labels: req.GetLabels(), Node: req.GetNode(), PageSize: req.GetPageSize()}
	for _, st := range req.GetStates() {
		f.States = append(f.States, client.State(stateName(st)))
	}
	tasks, next, err := c.ListPage(ctx, f, req.GetPageToken())
	resp := &taskdv1.ListTasksResponse{NextPageToken: next}
	for _, t := range tasks {
		resp.Tasks = append(resp.Tasks, t.Proto)
	}
	return resp, err
}

// defineNodes defines the nodes command.
func defineNodes(fs *flag.FlagSet) action {
	return func(e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.ListNodesResponse, error) {
			nodes, err := c.Nodes(ctx)
			resp := &taskdv1.ListNodesResponse{}
			for _, n := range nodes {
				resp.Nodes = append(resp.Nodes, n.Proto)
			}
			return resp, err
		}, func(resp *taskdv1.ListNodesResponse) error {
			return writeNodesTable(e.stdout, resp.GetNodes())
		})
	}
}

// defineIdentity defines the identity command.
func defineIdentity(fs *flag.FlagSet) action {
	identity := fs.String("identity", "", "`ID` of the identity (instead of the ID argument)")
	return func(e *env, args []string) error {
		id, err := identityArg(*identity, args)
		if err != nil {
			return err
		}
		return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.GetIdentityResponse, error) {
			got, err := c.Identity(ctx, id)
			return &taskdv1.GetIdentityResponse{Identity: identityProto(got)}, err
		}, func(resp *taskdv1.GetIdentityResponse) error {
			return writeIdentityTable(e.stdout, resp.GetIdentity())
		})
	}
}

// identityArg resolves the identity command's argument.
func identityArg(flagValue string, args []string) (string, error) {
	if len(args) > 1 {
		return "", usagef("unexpected argument %q", args[1])
	}
	if len(args) == 1 {
		if flagValue != "" && flagValue != args[0] {
			return "", usagef("identity given twice: %q and --identity %q", args[0], flagValue)
		}
		return args[0], nil
	}
	if flagValue == "" {
		return "", usagef("missing identity (give ID or --identity)")
	}
	return flagValue, nil
}

// sortedLabels renders labels as k=v pairs sorted by key.
func sortedLabels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

// defineMove defines the move command.
func defineMove(fs *flag.FlagSet) action {
	identity := fs.String("identity", "", "`ID` of the identity (instead of the ID argument)")
	to := fs.String("to", "", "`NODE` to move the identity to (required)")
	return func(e *env, args []string) error {
		id, err := identityArg(*identity, args)
		if err != nil {
			return err
		}
		if err := requireFlag("to", *to); err != nil {
			return err
		}
		return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.MoveIdentityResponse, error) {
			moved, err := c.Move(ctx, id, *to)
			return &taskdv1.MoveIdentityResponse{Identity: identityProto(moved)}, err
		}, func(resp *taskdv1.MoveIdentityResponse) error {
			return writeIdentityTable(e.stdout, resp.GetIdentity())
		})
	}
}

// defineDrain defines the drain command.
func defineDrain(fs *flag.FlagSet) action {
	return func(e *env, args []string) error {
		if len(args) != 1 {
			return usagef("give exactly one NODE")
		}
		c, err := e.taskClient()
		if err != nil {
			return err
		}
		ctx, cancel := e.rpcContext()
		defer cancel()
		n, err := c.Drain(ctx, args[0])
		if err != nil {
			return err
		}
		if e.opts.format == formatJSON {
			return writeJSON(e.stdout, &taskdv1.DrainNodeResponse{Node: n.Proto})
		}
		fmt.Fprintf(e.stdout, "drain of %s requested; it hands its identities away, then stops\n", args[0])
		return nil
	}
}

// call runs one call of the client under the command's deadline and prints
// its answer: the API's response, as rpc makes it of what the client
// returned, as JSON with -o json, else through table.
func call[R proto.Message](e *env, rpc func(context.Context, *client.Client) (R, error), table func(R) error) error {
	c, err := e.taskClient()
	if err != nil {
		return err
	}
	ctx, cancel := e.rpcContext()
	defer cancel()
	resp, err := rpc(ctx, c)
	if err != nil {
		return err
	}
	if e.opts.format == formatJSON {
		return writeJSON(e.stdout, resp)
	}
	return table(resp)
}

// taskProto is the API's form of a task the client returned, nil for none
// (the call failed).
func taskProto(t *client.Task) *taskdv1.Task {
	if t == nil {
		return nil
	}
	return t.Proto
}

// identityProto is taskProto for an identity.
func identityProto(id *client.Identity) *taskdv1.Identity {
	if id == nil {
		return nil
	}
	return id.Proto
}

package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

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
		synopsis: "--identity ID --kind KIND --scope identity|every-node [flags]",
		summary:  "schedule a task and print its id",
		define:   defineSchedule,
	},
	{
		name:     "get",
		synopsis: "--identity ID TASK_ID",
		summary:  "show a task",
		define: taskCommand(func(ctx context.Context, c taskdv1.TaskServiceClient, id, task string) (*taskdv1.Task, proto.Message, error) {
			resp, err := c.GetTask(ctx, &taskdv1.GetTaskRequest{Identity: id, TaskId: task})
			return resp.GetTask(), resp, err
		}),
	},
	{
		name:     "cancel",
		synopsis: "--identity ID TASK_ID",
		summary:  "cancel a task's future runs",
		define: taskCommand(func(ctx context.Context, c taskdv1.TaskServiceClient, id, task string) (*taskdv1.Task, proto.Message, error) {
			resp, err := c.CancelTask(ctx, &taskdv1.CancelTaskRequest{Identity: id, TaskId: task})
			return resp.GetTask(), resp, err
		}),
	},
	{
		name:     "run-now",
		synopsis: "--identity ID TASK_ID",
		summary:  "run a task once at once, leaving its schedule as it was",
		define: taskCommand(func(ctx context.Context, c taskdv1.TaskServiceClient, id, task string) (*taskdv1.Task, proto.Message, error) {
			resp, err := c.RunTaskNow(ctx, &taskdv1.RunTaskNowRequest{Identity: id, TaskId: task})
			return resp.GetTask(), resp, err
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
		synopsis: "--identity ID [--page-size N] [--page-token TOKEN | --all]",
		summary:  "list an identity's tasks in creation order",
		define:   defineList,
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

// rpcContext returns the context of one RPC: every RPC has the --timeout
// deadline.
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

// taskCommand makes the define function of a command that names one task
// and answers with it (get, cancel, run-now).
func taskCommand(call func(ctx context.Context, c taskdv1.TaskServiceClient, identity, task string) (*taskdv1.Task, proto.Message, error)) func(fs *flag.FlagSet) action {
	return func(fs *flag.FlagSet) action {
		identity := fs.String("identity", "", "`ID` of the identity that owns the task (required)")
		taskFlag := fs.String("task", "", "task `ID` (instead of the TASK_ID argument)")
		return func(e *env, args []string) error {
			id, err := taskID(*taskFlag, args)
			if err != nil {
				return err
			}
			if err := requireFlag("identity", *identity); err != nil {
				return err
			}
			c, err := e.taskClient()
			if err != nil {
				return err
			}
			ctx, cancel := e.rpcContext()
			defer cancel()
			task, resp, err := call(ctx, c, *identity, id)
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
	identity := fs.String("identity", "", "`ID` of the identity that owns the task (required)")
	taskFlag := fs.String("task", "", "task `ID` (instead of the TASK_ID argument)")
	return func(e *env, args []string) error {
		id, err := taskID(*taskFlag, args)
		if err != nil {
			return err
		}
		if err := requireFlag("identity", *identity); err != nil {
			return err
		}
		return call(e, func(ctx context.Context, c taskdv1.TaskServiceClient) (*taskdv1.ListRunsResponse, error) {
			return c.ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: *identity, TaskId: id})
		}, func(resp *taskdv1.ListRunsResponse) error {
			return writeRunsTable(e.stdout, resp.GetRuns())
		})
	}
}

// defineList defines the list command.
func defineList(fs *flag.FlagSet) action {
	identity := fs.String("identity", "", "`ID` of the identity whose tasks to list (required)")
	pageSize := fs.Int("page-size", 0, "tasks per page, 1-1000 (`N`; 0: the server's default of 100)")
	pageToken := fs.String("page-token", "", "`TOKEN` of the page to show, from an earlier answer")
	all := fs.Bool("all", false, "follow the page tokens and list every task")
	return func(e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if err := requireFlag("identity", *identity); err != nil {
			return err
		}
		if *pageSize < 0 || *pageSize > 1000 {
			return usagef("invalid value %d for flag --page-size: must be between 0 and 1000", *pageSize)
		}
		if *all && *pageToken != "" {
			return usagef("--all and --page-token exclude each other")
		}
		c, err := e.taskClient()
		if err != nil {
			return err
		}
		req := &taskdv1.ListTasksRequest{Identity: *identity, PageSize: int32(*pageSize), PageToken: *pageToken}
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
		if err := writeTasksTable(e.stdout, out.GetTasks()); err != nil {
			return err
		}
		if out.NextPageToken != "" {
			fmt.Fprintf(e.stderr, "taskctl: list: more tasks follow: use --all, or --page-token %s\n", out.NextPageToken)
		}
		return nil
	}
}

// listPage fetches one page of ListTasks under its own deadline.
func listPage(e *env, c taskdv1.TaskServiceClient, req *taskdv1.ListTasksRequest) (*taskdv1.ListTasksResponse, error) {
	ctx, cancel := e.rpcContext()
	defer cancel()
	return c.ListTasks(ctx, req)
}

// defineNodes defines the nodes command.
func defineNodes(fs *flag.FlagSet) action {
	return func(e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		return call(e, func(ctx context.Context, c taskdv1.TaskServiceClient) (*taskdv1.ListNodesResponse, error) {
			return c.ListNodes(ctx, &taskdv1.ListNodesRequest{})
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
		return call(e, func(ctx context.Context, c taskdv1.TaskServiceClient) (*taskdv1.GetIdentityResponse, error) {
			return c.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: id})
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

// scheduleOptions holds the schedule command's flags as given. Times and
// durations stay text so that buildScheduleRequest checks them and names the
// flag in its error; zero numbers mean "not given".
type scheduleOptions struct {
	Identity       string
	Kind           string
	Scope          string
	Payload        string
	PayloadFile    string
	Data           string
	Delay          string // once delay, or periodic start relative to now
	At             string // once time, or periodic start
	Every          string // periodic interval
	Start          string
	Count          int64
	Until          string
	NonDurable     bool
	Priority       int
	MaxAttempts    int
	TaskTimeout    string
	NoRecovery     bool
	AllowOverlap   bool
	Labels         []string // k=v, in the order given
	IdempotencyKey string
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
	fs.StringVar(&o.Payload, "payload", "", "payload given to the handler, as `TEXT`")
	fs.StringVar(&o.PayloadFile, "payload-file", "", "read the payload from the file at `PATH`")
	fs.StringVar(&o.Data, "data", "", "initial persistent data of the task, as `TEXT`")
	fs.StringVar(&o.Delay, "delay", "", "fire after `DUR` (with --every: the first period starts after DUR)")
	fs.StringVar(&o.At, "at", "", "fire at the `RFC3339` time (with --every: the first period starts then)")
	fs.StringVar(&o.Every, "every", "", "fire periodically, every `DUR` (fixed rate)")
	fs.StringVar(&o.Start, "start", "", "with --every: first fire time, `RFC3339` (default: one interval from now)")
	fs.Int64Var(&o.Count, "count", 0, "with --every: number of periods to fire (`N`; 0: no limit)")
	fs.StringVar(&o.Until, "until", "", "with --every: last instant a period may start, `RFC3339`")
	fs.BoolVar(&o.NonDurable, "non-durable", false, "never persist the task: it runs on the node that accepts it and is lost if that node stops")
	fs.IntVar(&o.Priority, "priority", 0, "priority `N` among runs due at the same instant; higher first")
	fs.IntVar(&o.MaxAttempts, "max-attempts", 0, "attempts of one fire time before the task is DEAD (`N`; 0: server default of 25)")
	fs.StringVar(&o.TaskTimeout, "timeout-task", "", "timeout of one run, `DUR` (default: server default of 5m)")
	fs.BoolVar(&o.NoRecovery, "no-recovery", false, "do not run again a run that a crash interrupted (at-most-once)")
	fs.BoolVar(&o.AllowOverlap, "allow-overlap", false, "let a recurring task start while its previous run goes on")
	fs.Var((*stringList)(&o.Labels), "label", "label `k=v` for the client (repeatable)")
	fs.StringVar(&o.IdempotencyKey, "idempotency-key", "", "`KEY` that makes scheduling twice return the first task")
}

// defineSchedule defines the schedule command.
func defineSchedule(fs *flag.FlagSet) action {
	o := &scheduleOptions{}
	defineScheduleFlags(fs, o)
	return func(e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
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
		resp, err := c.ScheduleTask(ctx, req)
		if err != nil {
			return err
		}
		if e.opts.format == formatJSON {
			return writeJSON(e.stdout, resp)
		}
		_, err = fmt.Fprintln(e.stdout, resp.GetTask().GetId())
		return err
	}
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
// Triggers: with --every, one PeriodicTrigger whose start comes from --start,
// --at or now+--delay (at most one of them); without it, one OnceTrigger at
// --at, after --delay, or (neither) now.
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
		AllowOverlap:   o.AllowOverlap,
		IdempotencyKey: o.IdempotencyKey,
	}

	// Payload and data.
	switch {
	case o.Payload != "" && o.PayloadFile != "":
		return nil, usagef("--payload and --payload-file exclude each other")
	case o.PayloadFile != "":
		b, err := os.ReadFile(o.PayloadFile)
		if err != nil {
			return nil, usagef("invalid value for flag --payload-file: %v", err)
		}
		spec.Payload = b
	case o.Payload != "":
		spec.Payload = []byte(o.Payload)
	}
	if o.Data != "" {
		spec.Data = []byte(o.Data)
	}

	// Trigger.
	delay, hasDelay, err := parseDurationFlag("delay", o.Delay, false)
	if err != nil {
		return nil, err
	}
	at, err := parseTimeFlag("at", o.At)
	if err != nil {
		return nil, err
	}
	if hasDelay && at != nil {
		return nil, usagef("--delay and --at exclude each other")
	}
	every, hasEvery, err := parseDurationFlag("every", o.Every, true)
	if err != nil {
		return nil, err
	}
	start, err := parseTimeFlag("start", o.Start)
	if err != nil {
		return nil, err
	}
	until, err := parseTimeFlag("until", o.Until)
	if err != nil {
		return nil, err
	}
	if o.Count < 0 {
		return nil, usagef("invalid value %d for flag --count: must not be negative", o.Count)
	}
	if hasEvery {
		if every < time.Millisecond {
			return nil, usagef("invalid value %q for flag --every: must be at least 1ms", o.Every)
		}
		if start != nil && (hasDelay || at != nil) {
			return nil, usagef("--start excludes --delay and --at (with --every they set the start)")
		}
		switch {
		case at != nil:
			start = at
		case hasDelay:
			s := now.Add(delay)
			start = &s
		}
		if start != nil && until != nil && until.Before(*start) {
			return nil, usagef("invalid value %q for flag --until: before the first fire time %s", o.Until, formatTime(timestamppb.New(*start)))
		}
		p := &taskdv1.PeriodicTrigger{Interval: durationpb.New(every), Count: o.Count}
		if start != nil {
			p.Start = timestamppb.New(*start)
		}
		if until != nil {
			p.End = timestamppb.New(*until)
		}
		spec.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: p}}}
	} else {
		for _, f := range []struct {
			name string
			set  bool
		}{{"start", start != nil}, {"count", o.Count != 0}, {"until", until != nil}} {
			if f.set {
				return nil, usagef("--%s needs --every", f.name)
			}
		}
		once := &taskdv1.OnceTrigger{}
		switch {
		case at != nil:
			once.At = timestamppb.New(*at)
		case hasDelay:
			once.Delay = durationpb.New(delay)
		}
		spec.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: once}}}
	}

	// Execution settings.
	if o.Priority < math.MinInt32 || o.Priority > math.MaxInt32 {
		return nil, usagef("invalid value %d for flag --priority: out of range", o.Priority)
	}
	spec.Priority = int32(o.Priority)
	if o.MaxAttempts < 0 || o.MaxAttempts > math.MaxInt32 {
		return nil, usagef("invalid value %d for flag --max-attempts: must be between 0 and %d", o.MaxAttempts, math.MaxInt32)
	}
	spec.MaxAttempts = int32(o.MaxAttempts)
	timeout, hasTimeout, err := parseDurationFlag("timeout-task", o.TaskTimeout, true)
	if err != nil {
		return nil, err
	}
	if hasTimeout {
		spec.Timeout = durationpb.New(timeout)
	}
	if o.NoRecovery {
		spec.RequestsRecovery = proto.Bool(false)
	}

	// Labels.
	for _, kv := range o.Labels {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("invalid value %q for flag --label: want key=value", kv)
		}
		if _, dup := spec.Labels[k]; dup {
			return nil, usagef("invalid value %q for flag --label: key %q given twice", kv, k)
		}
		if spec.Labels == nil {
			spec.Labels = make(map[string]string)
		}
		spec.Labels[k] = v
	}
	return &taskdv1.ScheduleTaskRequest{Task: spec}, nil
}

// describeError renders a failed command's error on one line. gRPC errors
// read "<code>: <message>", with a hint for Unavailable and DeadlineExceeded.
func describeError(err error, opts *globalOptions) string {
	st, ok := status.FromError(err)
	if !ok {
		return oneLine(err.Error())
	}
	msg := fmt.Sprintf("%s: %s", st.Code(), oneLine(st.Message()))
	switch st.Code() {
	case codes.Unavailable:
		msg += fmt.Sprintf(" (is a taskd node listening on %s? set it with --addr or %s)", opts.addr, envAddr)
	case codes.DeadlineExceeded:
		msg += fmt.Sprintf(" (no answer from %s within --timeout %s)", opts.addr, opts.timeout)
	}
	return msg
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
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
		return call(e, func(ctx context.Context, c taskdv1.TaskServiceClient) (*taskdv1.MoveIdentityResponse, error) {
			return c.MoveIdentity(ctx, &taskdv1.MoveIdentityRequest{Identity: id, ToNode: *to})
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
		resp, err := c.DrainNode(ctx, &taskdv1.DrainNodeRequest{Node: args[0]})
		if err != nil {
			return err
		}
		if e.opts.format == formatJSON {
			return writeJSON(e.stdout, resp)
		}
		fmt.Fprintf(e.stdout, "drain of %s requested; it hands its identities away, then stops\n", args[0])
		return nil
	}
}

// call runs one RPC under the command's deadline and prints its answer: the
// response as JSON with -o json, else through table.
func call[R proto.Message](e *env, rpc func(context.Context, taskdv1.TaskServiceClient) (R, error), table func(R) error) error {
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

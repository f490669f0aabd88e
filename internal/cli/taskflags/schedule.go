package taskflags

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/taskd/taskd/internal/cli/cmdline"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is what schedule is given: its flags, or the tasks of its -f
// file.

// ScheduleOptions holds the schedule command's flags as given; zero values
// mean "not given".
type ScheduleOptions struct {
	Identity       string
	Kind           string
	Scope          string
	NonDurable     bool
	IdempotencyKey string
	File           string // -f: a batch of TaskSpecs in JSON
	triggerOptions
	specOptions
}

// DefineScheduleFlags registers the schedule command's flags into o.
func DefineScheduleFlags(fs *flag.FlagSet, o *ScheduleOptions) {
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

// parseScope maps the --scope value to a Scope. It accepts identity and
// every-node in any case, with - or _.
func parseScope(s string) (taskdv1.Scope, error) {
	switch strings.ReplaceAll(strings.ToLower(s), "_", "-") {
	case "":
		return 0, cmdline.Usagef("missing required flag --scope (identity or every-node)")
	case "identity":
		return taskdv1.Scope_SCOPE_IDENTITY, nil
	case "every-node":
		return taskdv1.Scope_SCOPE_EVERY_NODE, nil
	}
	return 0, cmdline.Usagef("invalid value %q for flag --scope: want identity or every-node", s)
}

// BuildScheduleRequest turns the schedule flags into a ScheduleTaskRequest.
// now is the client's clock, used only to turn --delay into a periodic start.
// Every error is a cmdline.UsageError naming the flag.
//
// The triggers are those of buildTriggers; with no trigger flag at all, the
// request has none and the server gives the task its default trigger
// (once, now), the same for every client.
func BuildScheduleRequest(o ScheduleOptions, now time.Time) (*taskdv1.ScheduleTaskRequest, error) {
	if err := cmdline.RequireFlag("identity", o.Identity); err != nil {
		return nil, err
	}
	if err := cmdline.RequireFlag("kind", o.Kind); err != nil {
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

// ReadTaskSpecs reads the tasks of schedule -f from path ("-": stdin). The
// file holds a JSON array of TaskSpecs in protojson form, or an object
// {"tasks": [...]} (a ScheduleTasksRequest). Errors are cmdline.UsageErrors naming
// the flag.
func ReadTaskSpecs(stdin io.Reader, path string) ([]*taskdv1.TaskSpec, error) {
	b, err := cmdline.ReadFile(stdin, path)
	if err != nil {
		return nil, err
	}
	specs, err := parseTaskSpecs(b)
	if err != nil {
		return nil, cmdline.Usagef("invalid value %q for flag -f: %v", path, err)
	}
	return specs, nil
}

// parseTaskSpecs decodes the content of a schedule -f file.
func parseTaskSpecs(b []byte) ([]*taskdv1.TaskSpec, error) {
	b = bytes.TrimSpace(b)
	var specs []*taskdv1.TaskSpec
	switch {
	case len(b) == 0:
		return nil, fmt.Errorf("the file is empty; want a JSON array of tasks")
	case b[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(b, &items); err != nil {
			return nil, fmt.Errorf("not a JSON array: %v", err)
		}
		for i, item := range items {
			s := &taskdv1.TaskSpec{}
			if err := protojson.Unmarshal(item, s); err != nil {
				return nil, fmt.Errorf("tasks[%d]: %v", i, err)
			}
			specs = append(specs, s)
		}
	case b[0] == '{':
		req := &taskdv1.ScheduleTasksRequest{}
		if err := protojson.Unmarshal(b, req); err != nil {
			return nil, fmt.Errorf("not a {\"tasks\": [...]} object: %v", err)
		}
		specs = req.GetTasks()
	default:
		return nil, fmt.Errorf("want a JSON array of tasks or an object {\"tasks\": [...]}")
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("the file holds no task")
	}
	return specs, nil
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file holds the commands that change a task after it is scheduled
// (update, pause, resume), list pauses, and preview triggers.

// updateOptions holds the update command's flags.
type updateOptions struct {
	Identity    string
	Task        string
	Revision    int64
	NoLabels    bool
	NoCalendars bool
	triggerOptions
	specOptions
}

// updateOwnFlags are the update flags that change nothing by themselves.
var updateOwnFlags = []string{"identity", "task", "revision", "o", "output"}

// defineUpdateFlags registers the update command's flags into o.
func defineUpdateFlags(fs *flag.FlagSet, o *updateOptions) {
	fs.StringVar(&o.Identity, "identity", "", "`ID` of the identity that owns the task (required)")
	fs.StringVar(&o.Task, "task", "", "task `ID` (instead of the TASK_ID argument)")
	fs.Int64Var(&o.Revision, "revision", 0, "update only if the task is still at revision `N` (from an earlier get); default: the revision this command reads")
	defineTriggerFlags(fs, &o.triggerOptions, true)
	defineSpecFlags(fs, &o.specOptions)
	fs.BoolVar(&o.NoLabels, "no-labels", false, "remove every label")
	fs.BoolVar(&o.NoCalendars, "no-calendars", false, "remove every calendar")
}

// defineUpdate defines the update command: it reads the task, applies the
// flags given to its spec and writes it back conditional on the revision
// read, so that a change in between fails with ABORTED instead of being
// overwritten.
func defineUpdate(fs *flag.FlagSet) action {
	o := &updateOptions{}
	defineUpdateFlags(fs, o)
	return func(e *env, args []string) error {
		id, err := taskID(o.Task, args)
		if err != nil {
			return err
		}
		if err := requireFlag("identity", o.Identity); err != nil {
			return err
		}
		given := func(name string) bool { return flagGiven(fs, name) }
		if otherFlag(fs, updateOwnFlags...) == "" {
			return usagef("nothing to update: give a trigger flag (--cron, --every, ...) or a setting (--payload, --priority, --label, ...)")
		}
		if o.Revision < 0 {
			return usagef("invalid value %d for flag --revision: must be positive", o.Revision)
		}
		// The flags are checked before anything is read.
		edit, err := buildUpdate(*o, given, time.Now())
		if err != nil {
			return err
		}
		c, err := e.taskClient()
		if err != nil {
			return err
		}
		ctx, cancel := e.rpcContext()
		defer cancel()
		got, err := c.Get(ctx, o.Identity, id)
		if err != nil {
			return err
		}
		req, err := edit(got.Proto)
		if err != nil {
			return err
		}
		// The spec as the API spells it, so that what the flags leave
		// alone is sent back as it was read.
		updated, err := c.Update(ctx, req.GetIdentity(), req.GetTaskId(), client.TaskSpec{Proto: req.GetSpec()}, req.GetRevision())
		if err != nil {
			return err
		}
		if e.opts.format == formatJSON {
			return writeJSON(e.stdout, &taskdv1.UpdateTaskResponse{Task: updated.Proto})
		}
		return writeTaskDetail(e.stdout, updated.Proto)
	}
}

// buildUpdate checks the update flags and returns the function that makes
// the UpdateTaskRequest from the task as read: its spec with the flags
// given applied (triggers replaced if any trigger flag is given; labels and
// calendars replaced if given), its data left out so that the server keeps
// it unless --data is given, and the revision read (or --revision).
func buildUpdate(o updateOptions, given func(string) bool, now time.Time) (func(*taskdv1.Task) (*taskdv1.UpdateTaskRequest, error), error) {
	var triggers []*taskdv1.Trigger
	replaceTriggers := false
	for _, name := range triggerFlags {
		replaceTriggers = replaceTriggers || given(name)
	}
	if replaceTriggers {
		var err error
		if triggers, err = buildTriggers(o.triggerOptions, now); err != nil {
			return nil, err
		}
		if len(triggers) == 0 {
			return nil, usagef("the trigger flags given make no trigger: give --at, --delay, --every, --cron or --on-startup")
		}
	}
	if o.NoLabels && given("label") {
		return nil, usagef("--no-labels and --label exclude each other")
	}
	if o.NoCalendars && given("calendar") {
		return nil, usagef("--no-calendars and --calendar exclude each other")
	}
	// Check the settings once on a scratch spec, so that a bad flag is
	// reported before any call.
	if err := applySpecOptions(&taskdv1.TaskSpec{}, o.specOptions, given); err != nil {
		return nil, err
	}
	return func(t *taskdv1.Task) (*taskdv1.UpdateTaskRequest, error) {
		spec := proto.Clone(t.GetSpec()).(*taskdv1.TaskSpec)
		spec.Data = nil
		if err := applySpecOptions(spec, o.specOptions, given); err != nil {
			return nil, err
		}
		if replaceTriggers {
			spec.Triggers = triggers
		}
		if o.NoLabels {
			spec.Labels = nil
		}
		if o.NoCalendars {
			spec.Calendars = nil
		}
		rev := t.GetRevision()
		if o.Revision != 0 {
			rev = o.Revision
		}
		return &taskdv1.UpdateTaskRequest{Identity: spec.GetIdentity(), TaskId: t.GetId(), Spec: spec, Revision: rev}, nil
	}, nil
}

// pauseTarget is what a pause or resume command names: a task, an
// identity or a kind.
type pauseTarget struct {
	identity, task, kind string
}

// pauseTargetFlags registers the flags of pause and resume and returns the
// function that resolves them: --identity ID [TASK_ID | --task ID], or
// --kind KIND.
func pauseTargetFlags(fs *flag.FlagSet, verb string) func(args []string) (pauseTarget, error) {
	identity := fs.String("identity", "", "`ID` of the identity: with a TASK_ID, of the task to "+verb+"; alone, "+verb+" every task of the identity")
	taskFlag := fs.String("task", "", "task `ID` (instead of the TASK_ID argument)")
	kind := fs.String("kind", "", verb+" every task of `KIND` in the cluster")
	return func(args []string) (pauseTarget, error) {
		if *kind != "" {
			if *identity != "" {
				return pauseTarget{}, usagef("--kind and --identity exclude each other")
			}
			if len(args) > 0 {
				return pauseTarget{}, usagef("unexpected argument %q (--kind names no task)", args[0])
			}
			if *taskFlag != "" {
				return pauseTarget{}, usagef("--kind and --task exclude each other")
			}
			return pauseTarget{kind: *kind}, nil
		}
		if *identity == "" {
			return pauseTarget{}, usagef("missing required flag --identity or --kind")
		}
		if len(args) == 0 && *taskFlag == "" {
			return pauseTarget{identity: *identity}, nil
		}
		id, err := taskID(*taskFlag, args)
		if err != nil {
			return pauseTarget{}, err
		}
		return pauseTarget{identity: *identity, task: id}, nil
	}
}

// definePause defines the pause command.
func definePause(fs *flag.FlagSet) action {
	target := pauseTargetFlags(fs, "pause")
	return func(e *env, args []string) error {
		tg, err := target(args)
		if err != nil {
			return err
		}
		switch {
		case tg.task != "":
			return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.PauseTaskResponse, error) {
				t, err := c.Pause(ctx, tg.identity, tg.task)
				return &taskdv1.PauseTaskResponse{Task: taskProto(t)}, err
			}, func(resp *taskdv1.PauseTaskResponse) error {
				return writeTaskDetail(e.stdout, resp.GetTask())
			})
		case tg.kind != "":
			return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.PauseKindResponse, error) {
				p, err := c.PauseKind(ctx, tg.kind)
				return &taskdv1.PauseKindResponse{Pause: pauseProto(p)}, err
			}, func(resp *taskdv1.PauseKindResponse) error {
				return writePausesTable(e.stdout, []*taskdv1.Pause{resp.GetPause()})
			})
		}
		return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.PauseIdentityResponse, error) {
			p, err := c.PauseIdentity(ctx, tg.identity)
			return &taskdv1.PauseIdentityResponse{Pause: pauseProto(p)}, err
		}, func(resp *taskdv1.PauseIdentityResponse) error {
			return writePausesTable(e.stdout, []*taskdv1.Pause{resp.GetPause()})
		})
	}
}

// defineResume defines the resume command.
func defineResume(fs *flag.FlagSet) action {
	target := pauseTargetFlags(fs, "resume")
	return func(e *env, args []string) error {
		tg, err := target(args)
		if err != nil {
			return err
		}
		switch {
		case tg.task != "":
			return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.ResumeTaskResponse, error) {
				t, err := c.Resume(ctx, tg.identity, tg.task)
				return &taskdv1.ResumeTaskResponse{Task: taskProto(t)}, err
			}, func(resp *taskdv1.ResumeTaskResponse) error {
				return writeTaskDetail(e.stdout, resp.GetTask())
			})
		case tg.kind != "":
			return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.ResumeKindResponse, error) {
				return &taskdv1.ResumeKindResponse{}, c.ResumeKind(ctx, tg.kind)
			}, func(*taskdv1.ResumeKindResponse) error {
				_, err := fmt.Fprintf(e.stdout, "kind %s resumed\n", tg.kind)
				return err
			})
		}
		return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.ResumeIdentityResponse, error) {
			return &taskdv1.ResumeIdentityResponse{}, c.ResumeIdentity(ctx, tg.identity)
		}, func(*taskdv1.ResumeIdentityResponse) error {
			_, err := fmt.Fprintf(e.stdout, "identity %s resumed\n", tg.identity)
			return err
		})
	}
}

// definePauses defines the pauses command.
func definePauses(fs *flag.FlagSet) action {
	return func(e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		return call(e, func(ctx context.Context, c *client.Client) (*taskdv1.ListPausesResponse, error) {
			pauses, err := c.Pauses(ctx)
			resp := &taskdv1.ListPausesResponse{}
			for _, p := range pauses {
				resp.Pauses = append(resp.Pauses, p.Proto)
			}
			return resp, err
		}, func(resp *taskdv1.ListPausesResponse) error {
			return writePausesTable(e.stdout, resp.GetPauses())
		})
	}
}

// previewOptions holds the preview command's flags.
type previewOptions struct {
	triggerOptions
	Calendars []string
	From      string
	Count     int
}

// definePreviewFlags registers the preview command's flags into o.
func definePreviewFlags(fs *flag.FlagSet, o *previewOptions) {
	defineTriggerFlags(fs, &o.triggerOptions, false)
	fs.Var((*stringList)(&o.Calendars), "calendar", "`NAME` of an exclusion calendar to apply (repeatable)")
	fs.StringVar(&o.From, "from", "", "list the fire times from the `RFC3339` time on (default: now)")
	fs.IntVar(&o.Count, "n", 10, "number of fire times, 1-1000 (`N`)")
}

// buildPreviewRequest turns the preview flags into a PreviewTriggersRequest.
// now is the client's clock: --delay with --every counts from --from, or
// from now. Every error is a usageError naming the flag.
func buildPreviewRequest(o previewOptions, now time.Time) (*taskdv1.PreviewTriggersRequest, error) {
	from, err := parseTimeFlag("from", o.From)
	if err != nil {
		return nil, err
	}
	if from != nil {
		now = *from
	}
	if o.Count < 1 || o.Count > 1000 {
		return nil, usagef("invalid value %d for flag -n: must be between 1 and 1000", o.Count)
	}
	triggers, err := buildTriggers(o.triggerOptions, now)
	if err != nil {
		return nil, err
	}
	if len(triggers) == 0 {
		return nil, usagef("missing trigger: give --cron, --every, --at or --delay")
	}
	cals, err := parseCalendars(o.Calendars)
	if err != nil {
		return nil, err
	}
	req := &taskdv1.PreviewTriggersRequest{Triggers: triggers, Calendars: cals, Count: int32(o.Count)}
	if from != nil {
		req.From = timestamppb.New(*from)
	}
	return req, nil
}

// definePreview defines the preview command.
func definePreview(fs *flag.FlagSet) action {
	o := &previewOptions{}
	definePreviewFlags(fs, o)
	return func(e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		req, err := buildPreviewRequest(*o, time.Now())
		if err != nil {
			return err
		}
		c, err := e.taskClient()
		if err != nil {
			return err
		}
		ctx, cancel := e.rpcContext()
		defer cancel()
		fts, err := c.Preview(ctx, previewSpec(req))
		if err != nil {
			return err
		}
		protos := make([]*taskdv1.PreviewFireTime, len(fts))
		for i, ft := range fts {
			protos[i] = ft.Proto
		}
		if e.opts.format == formatJSON {
			return writeFireTimesJSON(e.stdout, protos)
		}
		return writeFireTimes(e.stdout, protos, len(req.GetTriggers()) > 1)
	}
}

// previewSpec is the client's form of a preview request: its triggers as
// the API spells them.
func previewSpec(req *taskdv1.PreviewTriggersRequest) client.PreviewSpec {
	p := client.PreviewSpec{Calendars: req.GetCalendars(), Count: req.GetCount()}
	if req.GetFrom() != nil {
		p.From = req.GetFrom().AsTime()
	}
	for _, t := range req.GetTriggers() {
		p.Triggers = append(p.Triggers, client.Trigger{Proto: t})
	}
	return p
}

// pauseProto is taskProto for a pause.
func pauseProto(p *client.Pause) *taskdv1.Pause {
	if p == nil {
		return nil
	}
	return p.Proto
}

// writeFireTimesJSON writes fire times as a JSON list of RFC 3339 UTC
// strings.
func writeFireTimesJSON(w io.Writer, fts []*taskdv1.PreviewFireTime) error {
	list := make([]string, len(fts))
	for i, ft := range fts {
		list[i] = ft.GetAt().AsTime().UTC().Format(time.RFC3339Nano)
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

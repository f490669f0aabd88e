package taskcmd

import (
	"context"
	"flag"
	"time"

	"github.com/taskd/taskd/internal/cli/cmdline"
	"github.com/taskd/taskd/internal/cli/command"
	"github.com/taskd/taskd/internal/cli/render"
	"github.com/taskd/taskd/internal/cli/taskflags"
	"github.com/taskd/taskd/pkg/client"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Preview defines preview: it prints the next fire times of the triggers
// its flags make, without scheduling anything.
func Preview(fs *flag.FlagSet) command.Action {
	o := &taskflags.PreviewOptions{}
	taskflags.DefinePreviewFlags(fs, o)
	return func(e *command.Env, args []string) error {
		if err := cmdline.NoArgs(args); err != nil {
			return err
		}
		req, err := taskflags.BuildPreviewRequest(*o, time.Now())
		if err != nil {
			return err
		}
		var fts []*taskdv1.PreviewFireTime
		err = e.Do(func(ctx context.Context, c *client.Client) error {
			got, err := c.Preview(ctx, previewSpec(req))
			fts = command.Protos(got, func(ft client.FireTime) *taskdv1.PreviewFireTime { return ft.Proto })
			return err
		})
		if err != nil {
			return err
		}
		if e.JSON() {
			return render.WriteFireTimesJSON(e.Stdout, fts)
		}
		return render.WriteFireTimes(e.Stdout, fts, len(req.GetTriggers()) > 1)
	}
}

// previewSpec is the client's form of a preview request: its triggers as
// the API spells them.
func previewSpec(req *taskdv1.PreviewTriggersRequest) client.PreviewSpec {
	p := client.PreviewSpec{Calendars: req.GetCalendars(), Count: req.GetCount(), TaskID: req.GetTaskId()}
	if req.GetFrom() != nil {
		p.From = req.GetFrom().AsTime()
	}
	for _, t := range req.GetTriggers() {
		p.Triggers = append(p.Triggers, client.Trigger{Proto: t})
	}
	return p
}

package client

import (
	"context"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// PreviewSpec is what Preview computes fire times of.
type PreviewSpec struct {
	// Triggers as a TaskSpec carries them (OnStartup triggers make no fire
	// times in a preview).
	Triggers []Trigger
	// Calendars name exclusion calendars that must exist; their exclusions
	// apply.
	Calendars []string
	// From is the instant to start after; zero is now.
	From time.Time
	// Count of fire times, 1-1000; 0 is 10.
	Count int32
	// TaskID, if set, names the task whose jitter delays the fire times:
	// they are then the instants that task's runs are due.
	TaskID string
}

// FireTime is one fire time of a preview.
type FireTime struct {
	// At is the fire time.
	At time.Time
	// Trigger is the index in PreviewSpec.Triggers of the trigger that
	// makes it.
	Trigger int32
	// Local is At in the trigger's time zone, RFC 3339.
	Local string
	// Proto is the fire time as the API returned it.
	Proto *taskdv1.PreviewFireTime
}

// Preview returns the next fire times the triggers and calendars of p
// would make, in order, without scheduling anything.
func (c *Client) Preview(ctx context.Context, p PreviewSpec) ([]FireTime, error) {
	req := &taskdv1.PreviewTriggersRequest{Calendars: p.Calendars, From: timeOrNil(p.From), Count: p.Count, TaskId: p.TaskID}
	for _, t := range p.Triggers {
		req.Triggers = append(req.Triggers, t.toProto())
	}
	return send(ctx, c, "Preview", idempotent, taskdv1.TaskServiceClient.PreviewTriggers, req,
		func(resp *taskdv1.PreviewTriggersResponse) []FireTime {
			return each(resp.GetFireTimes(), func(ft *taskdv1.PreviewFireTime) FireTime {
				return FireTime{At: timeOf(ft.GetAt()), Trigger: ft.GetTrigger(), Local: ft.GetLocal(), Proto: ft}
			})
		})
}

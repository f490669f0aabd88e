package render

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file renders the fire times of a preview.

// WriteFireTimes writes one line per fire time: the time in its trigger's
// zone, then in UTC, both RFC 3339, to the second or, for a time between
// seconds (a periodic trigger started from now), to the millisecond
// (fireTimeLayout); withTrigger adds the index of the trigger that makes
// it. The exact instants are in the JSON output.
func WriteFireTimes(w io.Writer, fts []*taskdv1.PreviewFireTime, withTrigger bool) error {
	for _, ft := range fts {
		at := ft.GetAt().AsTime()
		local := at.UTC()
		// The server renders the local time to the second; its offset
		// gives the zone to render the exact instant in.
		if l, err := time.Parse(time.RFC3339, ft.GetLocal()); err == nil {
			local = at.In(l.Location())
		}
		layout := fireTimeLayout(at)
		line := local.Format(layout) + "  " + at.UTC().Format(layout)
		if withTrigger {
			line += fmt.Sprintf("  trigger %d", ft.GetTrigger())
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// fireTimeLayout is the layout a fire time is shown in: RFC 3339 to the
// second when it falls on one, else with milliseconds (always three
// digits, so the times of one trigger line up); the nanoseconds of a
// start taken from the clock say nothing to a reader.
func fireTimeLayout(at time.Time) string {
	if at.Nanosecond() == 0 {
		return time.RFC3339
	}
	return "2006-01-02T15:04:05.000Z07:00"
}

// WriteFireTimesJSON writes fire times as a JSON list of RFC 3339 UTC
// strings.
func WriteFireTimesJSON(w io.Writer, fts []*taskdv1.PreviewFireTime) error {
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

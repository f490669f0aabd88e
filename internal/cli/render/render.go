// Package render is how taskctl shows what the API answers: the output
// format of -o (table or json), the API's messages as multiline protojson,
// and for people the aligned tables and "Field: value" details of tasks,
// runs, nodes, identities, pauses, calendars and tokens, the lines of fire
// times and of events, with times in UTC and durations rounded to suit
// their size. It makes no call. No lock.
package render

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Format is the value of -o/--output.
type Format string

// The output formats.
const (
	FormatTable Format = "table" // human tables
	FormatJSON  Format = "json"  // protojson of the response message
)

// String returns the format's name.
func (f *Format) String() string { return string(*f) }

// Set accepts table or json.
func (f *Format) Set(v string) error {
	switch Format(v) {
	case FormatTable, FormatJSON:
		*f = Format(v)
		return nil
	}
	return fmt.Errorf("want table or json")
}

// messageWidth is how much of a run's message a table shows.
const messageWidth = 60

// WriteJSON writes m as multiline protojson with lowerCamelCase field
// names, followed by a newline.
func WriteJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: false}.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// newTable returns a tabwriter for aligned columns; the caller flushes it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// row writes one tab-separated row, making each cell safe for a table.
func row(tw io.Writer, cells ...string) {
	for i, c := range cells {
		cells[i] = cell(c)
	}
	fmt.Fprintln(tw, strings.Join(cells, "\t"))
}

// cell replaces control characters (tabs, newlines) with spaces and an empty
// value with "-".
func cell(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if s == "" {
		return "-"
	}
	return s
}

// OneLine folds a message onto one line.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Time renders a timestamp in RFC3339 UTC, or "-" when unset.
func Time(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "-"
	}
	return ts.AsTime().UTC().Format(time.RFC3339)
}

// humanDuration renders d rounded to a precision that suits its size:
// 850µs, 250ms, 1.23s, 5m3s, 2h5m.
func humanDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	switch {
	case d < time.Microsecond:
	case d < time.Millisecond:
		d = d.Round(time.Microsecond)
	case d < time.Second:
		d = d.Round(time.Millisecond)
	case d < time.Minute:
		d = d.Round(10 * time.Millisecond)
	case d < time.Hour:
		d = d.Round(time.Second)
	default:
		d = d.Round(time.Minute)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// formatDuration renders a proto duration, or "-" when unset.
func formatDuration(d *durationpb.Duration) string {
	if d == nil {
		return "-"
	}
	return humanDuration(d.AsDuration())
}

// runDuration is how long a run took, or "-" if it has not ended.
func runDuration(started, ended *timestamppb.Timestamp) string {
	if started == nil || ended == nil {
		return "-"
	}
	return humanDuration(ended.AsTime().Sub(started.AsTime()))
}

// trimMessage folds a message onto one line and cuts it to at most width
// runes, marking a cut with "...".
func trimMessage(s string, width int) string {
	s = OneLine(s)
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	return string(r[:width-3]) + "..."
}

// Enum names without their prefixes, as tables show them.

func stateName(s taskdv1.TaskState) string { return strings.TrimPrefix(s.String(), "TASK_STATE_") }
func outcomeName(o taskdv1.Outcome) string { return strings.TrimPrefix(o.String(), "OUTCOME_") }
func nodeStateName(s taskdv1.NodeState) string {
	return strings.TrimPrefix(s.String(), "NODE_STATE_")
}
func scopeName(s taskdv1.Scope) string { return strings.TrimPrefix(s.String(), "SCOPE_") }
func misfireName(m taskdv1.MisfirePolicy) string {
	if m == taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED {
		return "default"
	}
	return strings.TrimPrefix(m.String(), "MISFIRE_POLICY_")
}

// yesNo renders a bool for a human.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/taskd/taskd/internal/eventview"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file renders the task events of taskctl events.

// EventTypeNames lists the event types in lower case, in their order.
func EventTypeNames() []string {
	var names []string
	for n := int32(1); ; n++ {
		name, ok := taskdv1.EventType_name[n]
		if !ok {
			return names
		}
		names = append(names, strings.ToLower(strings.TrimPrefix(name, "EVENT_TYPE_")))
	}
}

// eventTypeWidth is the width of the longest event type name, for aligned
// lines.
var eventTypeWidth = func() int {
	w := 0
	for _, n := range EventTypeNames() {
		w = max(w, len(n))
	}
	return w
}()

// eventTimeLayout is RFC 3339 with milliseconds.
const eventTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatEvent renders an event on one line: time (UTC, milliseconds),
// type, identity, task, then what the event has of run number, attempt,
// node, kind (of a kind pause), outcome, next fire time, "armed" (a run
// armed ahead of its fire time, internal/eventview), count and message,
// and last the cursor to resume after it.
func FormatEvent(ev *taskdv1.Event) string {
	at := "-"
	if ev.GetTime() != nil {
		at = ev.GetTime().AsTime().UTC().Format(eventTimeLayout)
	}
	typ := strings.TrimPrefix(ev.GetType().String(), "EVENT_TYPE_")
	parts := []string{at, fmt.Sprintf("%-*s", eventTypeWidth, typ), cell(ev.GetIdentity()), cell(ev.GetTaskId())}
	if ev.GetRunNumber() > 0 {
		parts = append(parts, "run "+strconv.FormatInt(ev.GetRunNumber(), 10))
	}
	if ev.GetAttempt() > 1 {
		parts = append(parts, "attempt "+strconv.Itoa(int(ev.GetAttempt())))
	}
	if ev.GetNode() != "" {
		parts = append(parts, "node "+cell(ev.GetNode()))
	}
	if ev.GetTaskId() == "" && ev.GetKind() != "" {
		parts = append(parts, "kind "+cell(ev.GetKind()))
	}
	if ev.GetOutcome() != taskdv1.Outcome_OUTCOME_UNSPECIFIED {
		parts = append(parts, "outcome "+outcomeName(ev.GetOutcome()))
	}
	if ev.GetNext() != nil {
		parts = append(parts, "next "+ev.GetNext().AsTime().UTC().Format(eventTimeLayout))
	}
	if eventview.Armed(ev) {
		// Written up to --look-ahead before its time: lines stay in the
		// order of the cluster's writes, and this one says why its time is
		// later than the next line's.
		parts = append(parts, "armed")
	}
	if ev.GetCount() > 0 {
		parts = append(parts, "count "+strconv.FormatInt(ev.GetCount(), 10))
	}
	if m := OneLine(ev.GetMessage()); m != "" {
		parts = append(parts, "message "+strconv.Quote(m))
	}
	parts = append(parts, "cursor "+ev.GetCursor())
	return strings.Join(parts, "  ")
}

// WriteEventJSON writes an event as protojson on one line.
func WriteEventJSON(w io.Writer, ev *taskdv1.Event) error {
	b, err := protojson.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

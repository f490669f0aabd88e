// Package eventview holds what the tools that show task events (taskctl
// events, the console's live events) need to know about an event beyond
// its fields.
//
// Armed starts. A run due within the node's look-ahead (--look-ahead, 1s)
// is armed: its start is written up to that long before its fire time,
// planned as of the fire time, and its handler is called at the fire time.
// Its FIRED and STARTED events therefore come in the stream (the order of
// the cluster's writes) with a time later than that of events written just
// after them. A tool shows events in stream order and marks these two, so
// that their time does not read as the stream being out of order.
package eventview

import (
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Armed reports whether ev is the FIRED or STARTED event of an armed run:
// a run of a trigger whose time is its fire time, as a start planned as of
// the fire time has it. A run started when due is started after its fire
// time, so its time is later (by its fire lag); a manual run (trigger -1)
// is never armed, and its fire time is when it was started.
func Armed(ev *taskdv1.Event) bool {
	switch ev.GetType() {
	case taskdv1.EventType_EVENT_TYPE_FIRED, taskdv1.EventType_EVENT_TYPE_STARTED:
	default:
		return false
	}
	return ev.GetTrigger() >= 0 && ev.GetFireTime() != nil && ev.GetTime() != nil &&
		ev.GetTime().AsTime().Equal(ev.GetFireTime().AsTime())
}

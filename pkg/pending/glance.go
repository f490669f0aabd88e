package pending

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Glance is what a stored task record says about its next run, read off
// its encoding without decoding it (GlanceAt): a node that loads many
// tasks due far ahead queues them from this alone and reads the record
// again before it is due.
type Glance struct {
	ID       string
	Kind     []byte // a sub-slice of the encoding GlanceAt read
	Priority int32
	// Due is the earliest next fire time of the record's triggers.
	Due time.Time
}

// Field numbers of the stored model (proto/taskd/store/v1, taskd/v1) that
// GlanceAt reads or must see absent. They are wire format: they never
// change once released.
const (
	recID              = 1
	recSpec            = 2
	recState           = 3
	recTriggers        = 5
	recRetryAt         = 8
	recManualRequested = 11
	recRunning         = 12
	recRecoveryPending = 15
	recPausedAt        = 18

	specKind         = 2
	specTriggers     = 5
	specPriority     = 9
	specAllowOverlap = 14

	triggerOnStartup = 4

	triggerStateNext = 1

	timestampSeconds = 1
	timestampNanos   = 2

	stateScheduled = 1 // taskd.v1.TaskState_TASK_STATE_SCHEDULED
)

// GlanceAt reads b, an encoded TaskRecord, and reports ok when the record
// is plainly waiting for a trigger's next fire time: state SCHEDULED, with
// no run marker, no recovery or retry pending, no run asked for, not paused
// by itself, no overlap allowed, no on-start-up trigger, and a next fire
// time. For such a record the due time is exactly Glance.Due (the earliest
// next fire time of its triggers). Anything else, including an encoding it
// does not understand, is not ok: the caller decodes the record whole.
func GlanceAt(b []byte) (g Glance, ok bool) {
	var (
		state             uint64
		sawSpec, sawState bool
		haveDue           bool
	)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return Glance{}, false
		}
		b = b[n:]
		switch {
		case num == recID && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return Glance{}, false
			}
			g.ID, b = string(v), b[n:]
			continue
		case num == recSpec && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || sawSpec || !glanceSpec(v, &g) {
				return Glance{}, false // a spec in two parts would merge: decode it whole
			}
			sawSpec, b = true, b[n:]
			continue
		case num == recState && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return Glance{}, false
			}
			state, sawState, b = v, true, b[n:]
			continue
		case num == recTriggers && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return Glance{}, false
			}
			next, has, valid := glanceTriggerState(v)
			if !valid {
				return Glance{}, false
			}
			if has && (!haveDue || next.Before(g.Due)) {
				g.Due, haveDue = next, true
			}
			b = b[n:]
			continue
		case num == recRetryAt || num == recRunning || num == recRecoveryPending || num == recPausedAt:
			return Glance{}, false // present: not plainly waiting
		case num == recManualRequested && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 || v != 0 {
				return Glance{}, false
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return Glance{}, false
		}
		b = b[n:]
	}
	if g.ID == "" || !sawSpec || !sawState || state != stateScheduled || !haveDue {
		return Glance{}, false
	}
	return g, true
}

// glanceSpec reads the kind and priority of an encoded TaskSpec into g; it
// is false if the spec allows overlap or has an on-start-up trigger (their
// due times depend on more than the record), or is malformed.
func glanceSpec(b []byte, g *Glance) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch {
		case num == specKind && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false
			}
			g.Kind, b = v, b[n:]
			continue
		case num == specPriority && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			g.Priority, b = int32(v), b[n:]
			continue
		case num == specAllowOverlap && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 || v != 0 {
				return false
			}
			b = b[n:]
			continue
		case num == specTriggers && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || hasField(v, triggerOnStartup) {
				return false
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return false
		}
		b = b[n:]
	}
	return true
}

// glanceTriggerState reads the next fire time of an encoded TriggerState:
// has is false when it has none; valid is false if it is malformed.
func glanceTriggerState(b []byte) (next time.Time, has, valid bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return time.Time{}, false, false
		}
		b = b[n:]
		if num == triggerStateNext && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 || has {
				return time.Time{}, false, false // two parts would merge
			}
			var ok bool
			if next, ok = glanceTimestamp(v); !ok {
				return time.Time{}, false, false
			}
			has, b = true, b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return time.Time{}, false, false
		}
		b = b[n:]
	}
	return next, has, true
}

// glanceTimestamp decodes an encoded google.protobuf.Timestamp as AsTime
// does (time.Unix(seconds, nanos) in UTC).
func glanceTimestamp(b []byte) (time.Time, bool) {
	var secs, nanos int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return time.Time{}, false
		}
		b = b[n:]
		if (num == timestampSeconds || num == timestampNanos) && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return time.Time{}, false
			}
			if num == timestampSeconds {
				secs = int64(v)
			} else {
				nanos = int64(int32(v))
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return time.Time{}, false
		}
		b = b[n:]
	}
	return time.Unix(secs, nanos).UTC(), true
}

// hasField reports whether the encoded message b has a field num at its
// top level (false also if b is malformed before it).
func hasField(b []byte, num protowire.Number) bool {
	for len(b) > 0 {
		n2, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return true // malformed: treat as present, the caller decodes it whole
		}
		if n2 == num {
			return true
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(n2, typ, b)
		if n < 0 {
			return true
		}
		b = b[n:]
	}
	return false
}

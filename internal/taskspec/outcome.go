package taskspec

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is the limits of what a handler's outcome may ask to store
// (Go handlers, exec, webhook, remote workers alike): its message, its new
// data, its snooze and its earliest retry. The node checks them where the
// outcome is committed (taskservice's limitOutcome).

// CleanMessage makes a run's message storable: invalid UTF-8 (a handler's
// error text may be anything) is replaced, and a message over MaxMessage
// is cut on a character boundary and ends with a marker saying how long it
// was, so the whole stays within MaxMessage.
func CleanMessage(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= MaxMessage {
		return s
	}
	marker := fmt.Sprintf(" … [cut: the message was %d bytes, the limit is %d]", len(s), MaxMessage)
	cut := MaxMessage - len(marker)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + marker
}

// OutcomeAsks is what a run's outcome asks to store besides its message.
type OutcomeAsks struct {
	// Data is the task's new data, when DataSet.
	Data    []byte
	DataSet bool
	// Snooze and RetryAt are the run's snooze and its earliest retry; zero
	// when it asks for neither.
	Snooze, RetryAt time.Time
}

// Refusal says why the outcome asks for what cannot be stored in the task
// whose spec is task, or is "": new data over maxPayload (--max-payload)
// or making the task's encoded spec pass MaxTaskBytes, or a snooze or an
// earliest retry past MaxInstant.
func (a OutcomeAsks) Refusal(task *taskdv1.TaskSpec, maxPayload int) string {
	switch {
	case a.DataSet && len(a.Data) > maxPayload:
		return fmt.Sprintf("data too large: %d bytes > limit %d (--max-payload)", len(a.Data), maxPayload)
	case a.DataSet && specSizeWithData(task, a.Data) > MaxTaskBytes:
		return fmt.Sprintf("data too large: the task would be %d bytes encoded > limit %d", specSizeWithData(task, a.Data), MaxTaskBytes)
	case !a.Snooze.IsZero() && !a.Snooze.Before(MaxInstant):
		return fmt.Sprintf("snooze_until too far: %s is not before %s", a.Snooze.UTC().Format(time.RFC3339), MaxInstant.Format(time.DateOnly))
	case !a.RetryAt.IsZero() && !a.RetryAt.Before(MaxInstant):
		return fmt.Sprintf("retry time too far: %s is not before %s", a.RetryAt.UTC().Format(time.RFC3339), MaxInstant.Format(time.DateOnly))
	}
	return ""
}

// specSizeWithData is the encoded size of spec once its data is data.
func specSizeWithData(spec *taskdv1.TaskSpec, data []byte) int {
	return proto.Size(spec) - sizeOfBytesField(4, len(spec.GetData())) + sizeOfBytesField(4, len(data))
}

// sizeOfBytesField is the encoded size of a proto3 bytes field number num
// of n bytes (nothing when empty).
func sizeOfBytesField(num protowire.Number, n int) int {
	if n == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

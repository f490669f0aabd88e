package taskservice

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/calendar"
	"github.com/taskd/taskd/pkg/cron"
	"github.com/taskd/taskd/pkg/identity"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestSpecOverheadBound: a spec with every field but payload and data at
// its limit encodes within maxSpecOverhead, so MaxRequestBytes (the gRPC
// server's receive limit) holds a full batch of such tasks.
func TestSpecOverheadBound(t *testing.T) {
	s := &taskdv1.TaskSpec{
		Identity:       strings.Repeat("i", identity.MaxLen),
		Kind:           strings.Repeat("k", MaxKindLen),
		Scope:          taskdv1.Scope_SCOPE_IDENTITY,
		Priority:       -1 << 31,
		MaxAttempts:    MaxAttemptsLimit,
		Timeout:        durationpb.New(7 * 24 * time.Hour),
		Backoff:        &taskdv1.Backoff{Initial: durationpb.New(24 * time.Hour), Max: durationpb.New(7 * 24 * time.Hour)},
		IdempotencyKey: strings.Repeat("x", MaxIdempotencyKeyLen),
		Labels:         map[string]string{},
		Misfire:        taskdv1.MisfirePolicy(len(taskdv1.MisfirePolicy_name) - 1),
	}
	for i := range MaxLabels {
		s.Labels[fmt.Sprintf("%0*d", MaxLabelKeyLen, i)] = strings.Repeat("v", MaxLabelValueLen)
	}
	for i := range MaxCalendarsPerTask {
		s.Calendars = append(s.Calendars, fmt.Sprintf("%0*d", calendar.MaxNameLen, i))
	}
	end := timestamppb.New(MaxInstant.Add(-time.Nanosecond))
	for i := range MaxTriggers {
		s.Triggers = append(s.Triggers, &taskdv1.Trigger{Name: fmt.Sprintf("%0*d", MaxTriggerNameLen, i), Misfire: 3,
			Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: strings.Repeat(" ", cron.MaxLen),
				TimeZone: strings.Repeat("z", cron.MaxZoneLen), Start: end, End: end}}})
	}
	if size := proto.Size(s); size > maxSpecOverhead {
		t.Fatalf("a spec at every limit (no payload or data) is %d bytes encoded, more than maxSpecOverhead %d", size, maxSpecOverhead)
	}
	if MaxRequestBytes(256<<10) < MaxBatch*(2*(256<<10)+proto.Size(s)) {
		t.Fatalf("MaxRequestBytes %d does not hold %d such tasks", MaxRequestBytes(256<<10), MaxBatch)
	}
}

// TestCleanMessage: a message over MaxMessage is cut on a character
// boundary and ends with the marker, within MaxMessage.
func TestCleanMessage(t *testing.T) {
	for _, s := range []string{strings.Repeat("a", MaxMessage), strings.Repeat("a", MaxMessage+1), strings.Repeat("é", MaxMessage), "bad \xff"} {
		got := cleanMessage(s)
		if len(got) > MaxMessage || !strings.HasPrefix(s, strings.TrimSuffix(got[:min(len(got), 10)], "\uFFFD")) && s != "bad \xff" {
			t.Fatalf("cleanMessage of %d bytes: %d bytes %.40q", len(s), len(got), got)
		}
		if cut := len(s) > MaxMessage; cut != strings.Contains(got, "[cut: the message was") {
			t.Fatalf("cleanMessage of %d bytes: marker %v, want %v", len(s), !cut, cut)
		}
	}
}

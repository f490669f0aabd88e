package taskspec

import (
	"fmt"
	"os"
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

// TestLimitsDocumented: every row of Limits (taskservice.Limits) is in
// docs/limits.md with the same value, so the table users read is the one
// the code enforces.
func TestLimitsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/limits.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, l := range Limits(256 << 10) {
		row := fmt.Sprintf("| %s | %s | %s | %s |", l.What, l.Value, l.Field, l.Where)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/limits.md lacks the row\n%s", row)
		}
	}
}

package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestMetricsCountMisfiresAndOutcomes: a MISFIRED event adds the fire
// times it stands for; runs are counted by outcome, vetoed ones included.
func TestMetricsCountMisfiresAndOutcomes(t *testing.T) {
	m := newMetrics()
	m.observe(taskservice.Event{Type: taskservice.EventMisfired, Count: 3})
	m.observe(taskservice.Event{Type: taskservice.EventMisfired, Count: 2})
	m.observe(taskservice.Event{Type: taskservice.EventSucceeded, Outcome: taskdv1.Outcome_OUTCOME_SUCCESS})
	m.observe(taskservice.Event{Type: taskservice.EventVetoed})
	if got := testutil.ToFloat64(m.misfires); got != 5 {
		t.Fatalf("misfired fire times %v, want 5", got)
	}
	if got := testutil.ToFloat64(m.runs.WithLabelValues("SUCCESS")); got != 1 {
		t.Fatalf("SUCCESS runs %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.runs.WithLabelValues("VETOED")); got != 1 {
		t.Fatalf("VETOED runs %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.events.WithLabelValues("MISFIRED")); got != 2 {
		t.Fatalf("MISFIRED events %v, want 2", got)
	}
}

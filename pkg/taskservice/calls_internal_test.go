package taskservice

import (
	"errors"
	"testing"
	"time"

	"github.com/taskd/taskd/internal/runs"
)

// TestAnswerOf: what a handler's error asks for reaches the run path as
// the Ask it names, with its time and message, and what the handler left
// on its Run (data, message) with it. Snooze(zero) asks for the moment it
// was called: at once, never "done".
func TestAnswerOf(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	boom := errors.New("boom")
	for _, tc := range []struct {
		name  string
		err   error
		ask   runs.Ask
		until time.Time
		text  string
	}{
		{"plain error", boom, runs.AskError, time.Time{}, ""},
		{"retry", Retry(boom), runs.AskRetry, time.Time{}, "boom"},
		{"retry at", RetryAt(boom, at), runs.AskRetry, at, "boom"},
		{"permanent", Permanent(boom), runs.AskPermanent, time.Time{}, "boom"},
		{"cancel", Cancel("enough"), runs.AskCancel, time.Time{}, "enough"},
		{"snooze", Snooze(at), runs.AskSnooze, at, "snoozed until " + at.Format(time.RFC3339Nano)},
		{"run again", RunAgainNow(), runs.AskRunAgain, time.Time{}, "run again now"},
		{"warning", Warning("careful"), runs.AskWarning, time.Time{}, "careful"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &Run{}
			run.SetData([]byte("d"))
			run.SetMessage("m")
			a := answerOf(tc.err, run)
			if a.Err != tc.err || a.Ask != tc.ask || !a.Until.Equal(tc.until) || a.Text != tc.text {
				t.Fatalf("answer %+v, want ask %d until %s text %q", a, tc.ask, tc.until, tc.text)
			}
			if string(a.Data) != "d" || !a.DataSet || a.Message != "m" || !a.MessageSet {
				t.Fatalf("answer %+v lost what the handler left on its run", a)
			}
		})
	}
	if a := answerOf(nil, &Run{}); a.Err != nil || a.DataSet || a.MessageSet {
		t.Fatalf("nil error: answer %+v, want nothing asked or left", a)
	}
	before := time.Now()
	err := Snooze(time.Time{})
	a := answerOf(err, &Run{})
	if a.Ask != runs.AskSnooze || a.Until.Before(before) || a.Until.After(time.Now()) || IsRetryable(err) {
		t.Fatalf("Snooze(zero): answer %+v retryable %v, want a snooze at the moment it was called", a, IsRetryable(err))
	}
}

// TestRunEventsArePublicEvents: every event the run path emits is one of
// the public event types, by value.
func TestRunEventsArePublicEvents(t *testing.T) {
	public := map[EventType]bool{EventFired: true, EventVetoed: true, EventStarted: true, EventSucceeded: true,
		EventFailed: true, EventDropped: true, EventInterrupted: true, EventRetryScheduled: true,
		EventNextScheduled: true, EventFinalized: true, EventMisfired: true}
	for _, ty := range []runs.EventType{runs.EventFired, runs.EventVetoed, runs.EventStarted, runs.EventSucceeded,
		runs.EventFailed, runs.EventDropped, runs.EventInterrupted, runs.EventRetryScheduled,
		runs.EventNextScheduled, runs.EventFinalized, runs.EventMisfired} {
		if !public[EventType(ty)] {
			t.Errorf("run event %q is not a public EventType", ty)
		}
		delete(public, EventType(ty))
	}
	if len(public) != 0 {
		t.Errorf("public run events %v not emitted by the run path's types", public)
	}
}

package builtin

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/taskd/taskd/pkg/taskservice"
)

// This file maps what a command or a webhook answered to the run's outcome
// (contract §5.1, docs/workers.md "Exit codes and HTTP statuses"): the one
// table users rely on, so that a failed run is never taken for a success
// and a failure is retried unless the other side says it must not be.

// The exit codes of an exec command that ask for an outcome other than a
// plain failed attempt. Any exit other than 0 and these is a failed
// attempt, retried after the task's backoff up to its max_attempts (then
// the task is DEAD). They are also in the command's environment
// (TASKD_EXIT_RETRY, TASKD_EXIT_PERMANENT, TASKD_EXIT_CANCEL,
// TASKD_EXIT_SNOOZE), so that a script writes `exit $TASKD_EXIT_PERMANENT`
// rather than a number.
//
// 90 to 92 are outside the ranges other conventions give a meaning to (the
// sysexits.h codes 64 to 78, the shell's 126 and 127, 128+N for a death by
// signal N), so a command does not return them by accident.
const (
	// ExitRetry (EX_TEMPFAIL of sysexits.h) is a failed attempt, as any
	// other non-zero exit is; it is named for the commands that already
	// use it to ask for a retry.
	ExitRetry = 75
	// ExitPermanent is a failed run that is not retried: the task goes on
	// with its next fire time, or, if it has none, is DEAD.
	ExitPermanent = 90
	// ExitCancel cancels the task: no more runs.
	ExitCancel = 91
	// ExitSnooze runs the same fire time again later without using an
	// attempt: after the duration on the last line of stdout (see
	// parseDelay), DefaultSnooze if there is none.
	ExitSnooze = 92
)

// The headers by which a webhook's response asks for an outcome that no
// status says.
const (
	// OutcomeHeader asks for "cancel" or "snooze" whatever the status.
	OutcomeHeader = "X-Taskd-Outcome"
	// SnoozeForHeader is how long a snooze lasts (see parseDelay).
	SnoozeForHeader = "X-Taskd-Snooze-For"
)

// DefaultSnooze is how long a snooze lasts when the command or the
// response does not say, or says it in a form parseDelay refuses.
const DefaultSnooze = time.Minute

// exitCodeEnv is what the command's environment says about the exit codes.
var exitCodeEnv = []string{
	"TASKD_EXIT_RETRY=" + strconv.Itoa(ExitRetry),
	"TASKD_EXIT_PERMANENT=" + strconv.Itoa(ExitPermanent),
	"TASKD_EXIT_CANCEL=" + strconv.Itoa(ExitCancel),
	"TASKD_EXIT_SNOOZE=" + strconv.Itoa(ExitSnooze),
}

// maxDelaySeconds is taskservice.MaxHandlerDelay in whole seconds.
const maxDelaySeconds = int64(taskservice.MaxHandlerDelay / time.Second)

// parseDelay reads a delay as a command's stdout or a webhook's header
// gives it: a Go duration ("90s", "1m30s", "2h") or a whole number of
// seconds ("90"), surrounding blanks ignored; a count of seconds over
// maxDelaySeconds is read as that many. ok is false for anything else,
// and for a negative delay.
func parseDelay(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(min(n, maxDelaySeconds)) * time.Second, true
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false
	}
	return d, true
}

// snoozeFor is the snooze that s asks for: parseDelay's delay kept within
// taskservice.MinSnooze and taskservice.MaxHandlerDelay, or DefaultSnooze
// if s gives none (ok false).
func snoozeFor(s string) (d time.Duration, ok bool) {
	d, ok = parseDelay(s)
	if !ok {
		return DefaultSnooze, false
	}
	return min(max(d, taskservice.MinSnooze), taskservice.MaxHandlerDelay), true
}

// lastLine is the last non-blank line of b.
func lastLine(b []byte) string {
	b = bytes.TrimRight(b, " \t\r\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return string(bytes.TrimSpace(b))
}

// exitOutcome is the outcome of a command that exited with exitErr (not
// killed by the handler): stdout is what it wrote there, detail the last
// line of its stderr (": line", or ""). A death by a signal is a failed
// attempt, as a non-zero exit is: an OOM kill or a crash may not recur.
func exitOutcome(logger hclog.Logger, run *taskservice.Run, what string, exitErr *exec.ExitError, stdout []byte, detail string) error {
	code := exitErr.ExitCode()
	switch code {
	case ExitPermanent:
		return taskservice.Permanent(fmt.Errorf("%s: exit code %d (permanent failure, not retried)%s", what, code, detail))
	case ExitCancel:
		return taskservice.Cancel(fmt.Sprintf("%s: exit code %d (cancel the task)%s", what, code, detail))
	case ExitSnooze:
		line := lastLine(stdout)
		d, ok := snoozeFor(line)
		if !ok && line != "" {
			logger.Warn("exec snooze: the last line of stdout is not a duration; snoozing for the default",
				"kind", run.Kind, "task", run.TaskID, "line", truncate(line, 64), "default", DefaultSnooze)
		}
		return taskservice.Snooze(time.Now().Add(d))
	case -1: // killed by a signal that was not the handler's
		return taskservice.Retry(fmt.Errorf("%s: %w%s", what, exitErr, detail))
	case ExitRetry:
		return taskservice.Retry(fmt.Errorf("%s: exit code %d (retry requested)%s", what, code, detail))
	}
	return taskservice.Retry(fmt.Errorf("%s: exit code %d%s", what, code, detail))
}

// responseOutcome is the outcome of a webhook's response other than a
// plain 2xx (nil: a success): what OutcomeHeader asks for, else what the
// status says. body is the response's kept body, as the run's message.
func responseOutcome(logger hclog.Logger, run *taskservice.Run, what string, resp *http.Response, body []byte, now time.Time) error {
	code := resp.StatusCode
	status := fmt.Sprintf("status %d %s", code, http.StatusText(code))
	if ask := strings.TrimSpace(resp.Header.Get(OutcomeHeader)); ask != "" {
		switch strings.ToLower(ask) {
		case "cancel":
			return taskservice.Cancel(fmt.Sprintf("%s: %s with %s: cancel", what, status, OutcomeHeader))
		case "snooze":
			v := resp.Header.Get(SnoozeForHeader)
			d, ok := snoozeFor(v)
			if !ok && v != "" {
				logger.Warn("webhook snooze: "+SnoozeForHeader+" is not a duration; snoozing for the default",
					"kind", run.Kind, "task", run.TaskID, "value", truncate(v, 64), "default", DefaultSnooze)
			}
			return taskservice.Snooze(now.Add(d))
		}
		// The receiver asks for what this node does not know: a mismatch
		// of versions or a typo, which no retry mends.
		return taskservice.Permanent(fmt.Errorf("%s: %s with %s %q: want cancel or snooze",
			what, status, OutcomeHeader, truncate(ask, 64)))
	}
	if code >= 200 && code <= 299 {
		return nil
	}
	err := fmt.Errorf("%s: %s%s", what, status, quoteBody(body))
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		if at, ok := retryAfter(resp.Header.Get("Retry-After"), now); ok {
			return taskservice.RetryAt(err, at)
		}
		return taskservice.Retry(err)
	case code >= 500:
		return taskservice.Retry(err)
	}
	// Any other 4xx, a 3xx the client did not follow (304, or a redirect
	// without a Location), or a status outside the classes: the request
	// itself is refused, and sending it again will not change that.
	return taskservice.Permanent(err)
}

// retryAfter is the earliest retry that a Retry-After header value asks
// for, seconds or an HTTP date, at most taskservice.MaxHandlerDelay after
// now; ok is false for a missing or bad value, or a time already past.
func retryAfter(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	var at time.Time
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return time.Time{}, false
		}
		at = now.Add(time.Duration(min(n, maxDelaySeconds)) * time.Second)
	} else if t, err := http.ParseTime(v); err == nil {
		at = t
	} else {
		return time.Time{}, false
	}
	if !at.After(now) {
		return time.Time{}, false
	}
	if limit := now.Add(taskservice.MaxHandlerDelay); at.After(limit) {
		at = limit
	}
	return at, true
}

// truncate cuts s to at most n bytes on a character boundary, for a log
// line or an error that quotes a value from outside.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

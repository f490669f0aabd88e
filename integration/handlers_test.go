package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// fastBackoff retries after 50 ms, at most 100 ms.
var fastBackoff = &taskdv1.Backoff{
	Initial: durationpb.New(50 * time.Millisecond),
	Max:     durationpb.New(100 * time.Millisecond),
}

// TestExecHandlerEndToEnd runs the built-in exec handler in a real node
// (contract §5.1): exit 75 is retried with backoff, exit 0 succeeds with stdout
// as the message, exit $TASKD_EXIT_PERMANENT (90) is a failure not retried
// that leaves the task DEAD; the payload arrives on stdin and the TASKD_*
// variables in the environment.
func TestExecHandlerEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// flaky counts its attempts per task, records what it got, asks for a
	// retry twice and then succeeds.
	flaky := fmt.Sprintf(`cnt=%[1]s/count.$TASKD_TASK_ID; `+
		`n=$(( $(cat "$cnt" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$cnt"; `+
		`printf '%%s|%%s|%%s|%%s|%%s\n' "$TASKD_IDENTITY" "$TASKD_KIND" "$TASKD_NODE" "$TASKD_ATTEMPT" "$(cat)" >> %[1]s/seen.$TASKD_TASK_ID; `+
		`if [ "$n" -le 2 ]; then echo "not yet" >&2; exit 75; fi; echo "ok $TASKD_ATTEMPT"`,
		shellQuote(dir))
	node := startNode(t, nodeOptions{
		name:    "exec-node",
		dataDir: filepath.Join(dir, "data"),
		extra:   []string{"--exec", "flaky=" + flaky, "--exec", `bad=echo 'no such user' >&2; exit "$TASKD_EXIT_PERMANENT"`},
	})
	c := node.Client()

	payload := "payload for flaky"
	task := schedule(t, c, &taskdv1.TaskSpec{
		Identity: "carol", Kind: "flaky", Payload: []byte(payload), Triggers: onceAfter(0),
		MaxAttempts: 5, Backoff: fastBackoff,
	})
	bad := schedule(t, c, &taskdv1.TaskSpec{Identity: "dave", Kind: "bad", Triggers: onceAfter(0)})

	done := waitTaskState(t, c, "carol", task.GetId(), taskdv1.TaskState_TASK_STATE_COMPLETED)
	runs := mustListRuns(t, c, "carol", task.GetId())
	if done.GetLastRun().GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS || done.GetLastRun().GetMessage() != "ok 3" {
		t.Errorf("flaky: last run %v, want SUCCESS with message \"ok 3\"", done.GetLastRun())
	}
	if len(runs) != 3 {
		t.Fatalf("flaky: %d runs, want 3%s", len(runs), describeRuns(runs))
	}
	for i, want := range []struct {
		attempt int32
		outcome taskdv1.Outcome
	}{{3, taskdv1.Outcome_OUTCOME_SUCCESS}, {2, taskdv1.Outcome_OUTCOME_ERROR}, {1, taskdv1.Outcome_OUTCOME_ERROR}} {
		// Each attempt is a run of its own (a new run number) serving the
		// same fire time.
		r := runs[i]
		if r.GetAttempt() != want.attempt || r.GetOutcome() != want.outcome ||
			!r.GetFireTime().AsTime().Equal(runs[0].GetFireTime().AsTime()) ||
			(i > 0 && r.GetRunNumber() >= runs[i-1].GetRunNumber()) {
			t.Errorf("flaky: runs (newest first) = %s\nwant attempts 3, 2, 1 of one fire time with growing run numbers: SUCCESS, ERROR, ERROR", describeRuns(runs))
			break
		}
	}
	if m := runs[0].GetMessage(); m != "ok 3" {
		t.Errorf("flaky: message of the last run = %q, want %q", m, "ok 3")
	}
	for _, r := range runs[1:] {
		if !strings.Contains(r.GetMessage(), "exit code 75") || !strings.Contains(r.GetMessage(), "not yet") {
			t.Errorf("flaky: message of failed attempt %d = %q, want the exit code 75 and the stderr line", r.GetAttempt(), r.GetMessage())
		}
	}
	seen := fileLines(t, filepath.Join(dir, "seen."+task.GetId()))
	if len(seen) != 3 {
		t.Fatalf("flaky: the command ran %d times, want 3: %q", len(seen), seen)
	}
	for i, l := range seen {
		want := fmt.Sprintf("carol|flaky|exec-node|%d|%s", i+1, payload)
		if l != want {
			t.Errorf("flaky: attempt %d saw identity|kind|node|attempt|stdin = %q, want %q", i+1, l, want)
		}
	}

	badDone := waitTaskState(t, c, "dave", bad.GetId(), taskdv1.TaskState_TASK_STATE_DEAD)
	badRuns := mustListRuns(t, c, "dave", bad.GetId())
	switch {
	case badDone.GetLastRun().GetOutcome() != taskdv1.Outcome_OUTCOME_ERROR:
		t.Errorf("bad: last run %v, want ERROR", badDone.GetLastRun())
	case badDone.GetRunCount() != 1 || len(badRuns) != 1:
		t.Errorf("bad: run_count %d, %d runs; want one run, not retried%s", badDone.GetRunCount(), len(badRuns), describeRuns(badRuns))
	case badRuns[0].GetAttempt() != 1 || !strings.Contains(badRuns[0].GetMessage(), "exit code 90") ||
		!strings.Contains(badRuns[0].GetMessage(), "no such user"):
		t.Errorf("bad: run %s, want attempt 1 failing with exit code 90 and the stderr line", describeRuns(badRuns))
	}
}

// TestExecFailureIsRetriedThenDead: a command that exits 3 (any non-zero
// exit but the codes of their own) is a failed attempt, retried per the
// task's policy, and a task whose attempts are used up is DEAD. Before the
// fix the first exit 3 was a permanent failure and the task read
// COMPLETED after one run. The exit codes of their own cancel the task and
// snooze it (for the duration on stdout's last line, without an attempt).
func TestExecFailureIsRetriedThenDead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// snooze snoozes its first run for 1 s, then succeeds.
	snooze := fmt.Sprintf(`f=%s/snoozed.$TASKD_TASK_ID; if [ ! -e "$f" ]; then : > "$f"; echo 1s; exit "$TASKD_EXIT_SNOOZE"; fi; echo woke`,
		shellQuote(dir))
	node := startNode(t, nodeOptions{
		name:    "exec-fail-node",
		dataDir: filepath.Join(dir, "data"),
		extra: []string{"--exec", "fail=echo boom; exit 3", "--exec", "snooze=" + snooze,
			"--exec", `cancel=echo "enough" >&2; exit 91`},
	})
	c := node.Client()
	failing := schedule(t, c, &taskdv1.TaskSpec{Identity: "gina", Kind: "fail", Triggers: onceAfter(0),
		MaxAttempts: 2, Backoff: fastBackoff})
	snoozing := schedule(t, c, &taskdv1.TaskSpec{Identity: "hank", Kind: "snooze", Triggers: onceAfter(0),
		MaxAttempts: 1}) // a snooze that used an attempt would leave none for the second run
	cancelling := schedule(t, c, &taskdv1.TaskSpec{Identity: "ivy", Kind: "cancel", Triggers: every(50 * time.Millisecond)})

	dead := waitTaskState(t, c, "gina", failing.GetId(), taskdv1.TaskState_TASK_STATE_DEAD)
	runs := mustListRuns(t, c, "gina", failing.GetId())
	if len(runs) != 2 || dead.GetRunCount() != 2 {
		t.Fatalf("fail: run_count %d, runs %s\nwant exactly 2 runs", dead.GetRunCount(), describeRuns(runs))
	}
	for i, r := range runs {
		if r.GetOutcome() != taskdv1.Outcome_OUTCOME_ERROR || r.GetAttempt() != int32(2-i) || r.GetMessage() != "boom" {
			t.Errorf("fail: runs (newest first) %s\nwant attempts 2 and 1, both ERROR with stdout \"boom\"", describeRuns(runs))
			break
		}
	}
	if dead.GetFinishedAt() == nil || dead.GetLastRun().GetOutcome() != taskdv1.Outcome_OUTCOME_ERROR {
		t.Errorf("fail: task %v, want finished with last run ERROR", dead)
	}

	done := waitTaskState(t, c, "hank", snoozing.GetId(), taskdv1.TaskState_TASK_STATE_COMPLETED)
	runs = mustListRuns(t, c, "hank", snoozing.GetId())
	if len(runs) != 2 || runs[1].GetOutcome() != taskdv1.Outcome_OUTCOME_WARNING || runs[1].GetMessage() != "1s" ||
		runs[0].GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS || runs[0].GetMessage() != "woke" ||
		runs[0].GetAttempt() != 1 || !runs[0].GetFireTime().AsTime().Equal(runs[1].GetFireTime().AsTime()) {
		t.Fatalf("snooze: runs (newest first) %s\nwant a snoozed WARNING, then SUCCESS \"woke\": attempt 1 of the same fire time", describeRuns(runs))
	}
	// The snooze is counted from the end of the command, after the first
	// run's start: the second run starts at least 1 s after that.
	if woke, first := runs[0].GetStartedAt().AsTime(), runs[1].GetStartedAt().AsTime(); woke.Sub(first) < time.Second {
		t.Errorf("snooze: the second run started %s after the first, want at least the 1s asked", woke.Sub(first))
	}
	if done.GetLastRun().GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Errorf("snooze: last run %v, want SUCCESS", done.GetLastRun())
	}

	cancelled := waitTaskState(t, c, "ivy", cancelling.GetId(), taskdv1.TaskState_TASK_STATE_CANCELED)
	runs = mustListRuns(t, c, "ivy", cancelling.GetId())
	if len(runs) != 1 || runs[0].GetOutcome() != taskdv1.Outcome_OUTCOME_CANCELED || !strings.Contains(runs[0].GetMessage(), "enough") ||
		cancelled.GetRunCount() != 1 {
		t.Errorf("cancel: runs %s\nwant one CANCELED run quoting stderr", describeRuns(runs))
	}
}

// hookRequest is what the test webhook server received.
type hookRequest struct {
	path    string
	headers http.Header
	body    []byte
}

// hookServer answers /flaky with 503 to the first request of each task and
// 200 "done" after, and /reject with 400; it records every request.
type hookServer struct {
	mu   sync.Mutex
	reqs map[string][]hookRequest // by X-Taskd-Task-Id
}

func (h *hookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := r.Header.Get("X-Taskd-Task-Id")
	h.mu.Lock()
	h.reqs[id] = append(h.reqs[id], hookRequest{path: r.URL.Path, headers: r.Header.Clone(), body: body})
	n := len(h.reqs[id])
	h.mu.Unlock()
	switch {
	case r.URL.Path == "/reject":
		http.Error(w, "rejected", http.StatusBadRequest)
	case r.URL.Path == "/cancel":
		w.Header().Set("X-Taskd-Outcome", "cancel")
		fmt.Fprintln(w, "no longer wanted")
	case r.URL.Path == "/flaky" && n == 1:
		http.Error(w, "busy", http.StatusServiceUnavailable)
	default:
		fmt.Fprintln(w, "done")
	}
}

func (h *hookServer) requests(id string) []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.reqs[id]...)
}

// TestWebhookHandlerEndToEnd runs the built-in webhook handler in a real
// node against a loopback HTTP server (contract §5.1): 5xx is retried, 2xx
// succeeds with the body as the message, 400 is a failure not retried that
// leaves the task DEAD, X-Taskd-Outcome: cancel cancels the task; the
// payload is the body and the X-Taskd-* headers identify the run.
func TestWebhookHandlerEndToEnd(t *testing.T) {
	t.Parallel()
	hooks := &hookServer{reqs: map[string][]hookRequest{}}
	srv := httptest.NewServer(hooks)
	t.Cleanup(srv.Close) // after the node is killed (cleanups run last first)

	node := startNode(t, nodeOptions{
		name:    "hook-node",
		dataDir: filepath.Join(t.TempDir(), "data"),
		extra: []string{"--webhook", "hook=" + srv.URL + "/flaky", "--webhook", "hookbad=" + srv.URL + "/reject",
			"--webhook", "hookcancel=" + srv.URL + "/cancel"},
	})
	c := node.Client()

	payload := []byte("webhook payload \x00\x01\xff bytes")
	task := schedule(t, c, &taskdv1.TaskSpec{
		Identity: "erin", Kind: "hook", Payload: payload, Triggers: onceAfter(0), Backoff: fastBackoff,
	})
	bad := schedule(t, c, &taskdv1.TaskSpec{Identity: "frank", Kind: "hookbad", Payload: []byte("x"), Triggers: onceAfter(0)})
	cancelling := schedule(t, c, &taskdv1.TaskSpec{Identity: "gus", Kind: "hookcancel", Triggers: every(50 * time.Millisecond)})

	done := waitTaskState(t, c, "erin", task.GetId(), taskdv1.TaskState_TASK_STATE_COMPLETED)
	runs := mustListRuns(t, c, "erin", task.GetId())
	if len(runs) != 2 ||
		runs[0].GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS || runs[0].GetMessage() != "done" ||
		runs[1].GetOutcome() != taskdv1.Outcome_OUTCOME_ERROR || !strings.Contains(runs[1].GetMessage(), "503") {
		t.Fatalf("hook: runs (newest first) = %s\nwant SUCCESS \"done\" after ERROR with status 503", describeRuns(runs))
	}
	if done.GetLastRun().GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Errorf("hook: last run %v, want SUCCESS", done.GetLastRun())
	}
	reqs := hooks.requests(task.GetId())
	if len(reqs) != 2 {
		t.Fatalf("hook: server got %d requests for the task, want 2", len(reqs))
	}
	for i, req := range reqs {
		run := runs[len(runs)-1-i] // runs are newest first, requests oldest first
		h := req.headers
		for name, want := range map[string]string{
			"X-Taskd-Identity": "erin",
			"X-Taskd-Kind":     "hook",
			"X-Taskd-Node":     "hook-node",
			"X-Taskd-Run":      strconv.FormatInt(run.GetRunNumber(), 10),
			"X-Taskd-Attempt":  strconv.Itoa(int(run.GetAttempt())),
			"X-Taskd-Fence":    run.GetFence(),
			"Content-Type":     "application/octet-stream",
		} {
			if got := h.Get(name); got != want || got == "" {
				t.Errorf("hook: request %d: header %s = %q, want %q", i+1, name, got, want)
			}
		}
		if !bytes.Equal(req.body, payload) {
			t.Errorf("hook: request %d: body %q, want the payload %q", i+1, req.body, payload)
		}
	}

	badDone := waitTaskState(t, c, "frank", bad.GetId(), taskdv1.TaskState_TASK_STATE_DEAD)
	badRuns := mustListRuns(t, c, "frank", bad.GetId())
	switch {
	case badDone.GetLastRun().GetOutcome() != taskdv1.Outcome_OUTCOME_ERROR:
		t.Errorf("hookbad: last run %v, want ERROR", badDone.GetLastRun())
	case badDone.GetRunCount() != 1 || len(badRuns) != 1 || len(hooks.requests(bad.GetId())) != 1:
		t.Errorf("hookbad: run_count %d, %d runs, %d requests; want one, not retried%s",
			badDone.GetRunCount(), len(badRuns), len(hooks.requests(bad.GetId())), describeRuns(badRuns))
	case !strings.Contains(badRuns[0].GetMessage(), "400"):
		t.Errorf("hookbad: message %q does not give the status 400", badRuns[0].GetMessage())
	}

	waitTaskState(t, c, "gus", cancelling.GetId(), taskdv1.TaskState_TASK_STATE_CANCELED)
	if runs := mustListRuns(t, c, "gus", cancelling.GetId()); len(runs) != 1 ||
		runs[0].GetOutcome() != taskdv1.Outcome_OUTCOME_CANCELED || runs[0].GetMessage() != "no longer wanted" {
		t.Errorf("hookcancel: runs %s\nwant one CANCELED run with the body as its message", describeRuns(runs))
	}
}

//go:build unix

package builtin

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
)

// runExec runs command through an exec handler and returns its message and
// error; it fails the test if the handler does not return within 5 s.
func runExec(t *testing.T, ctx context.Context, h taskservice.Handler, run *taskservice.Run) (string, error) {
	t.Helper()
	type result struct {
		msg string
		err error
	}
	done := make(chan result, 1)
	go func() {
		msg, err := h.(*execHandler).run(ctx, run)
		done <- result{msg, err}
	}()
	select {
	case r := <-done:
		return r.msg, r.err
	case <-time.After(5 * time.Second):
		t.Fatal("exec handler did not return within 5s")
		return "", nil
	}
}

func TestExecEnvironmentAndStdin(t *testing.T) {
	t.Setenv("BUILTIN_TEST_NODE_VAR", "from-node")
	h := NewExec(`printf '%s|' "$TASKD_IDENTITY" "$TASKD_TASK_ID" "$TASKD_KIND" "$TASKD_RUN" "$TASKD_FENCE" "$TASKD_NODE" "$TASKD_ATTEMPT" "$EXTRA" "$BUILTIN_TEST_NODE_VAR"; cat`,
		ExecOptions{Env: []string{"EXTRA=extra-value", "TASKD_KIND=overridden"}})
	msg, err := runExec(t, context.Background(), h, testRun("payload\nline two"))
	if err != nil {
		t.Fatalf("err = %v, want nil", err)
	}
	want := "user-42|task-7|mail|12|5.9001|node-a|3|extra-value|from-node|payload\nline two"
	if msg != want {
		t.Errorf("message = %q, want %q", msg, want)
	}
}

// TestExecOutcomes: the exit code table of docs/workers.md. Any exit but
// 0 and the three codes of their own is a failed attempt that is retried
// (before the fix, every exit but 0 and 75 was a failure never retried);
// 90 is a failure not retried, 91 a cancel, 92 a snooze for the duration
// on stdout's last line.
func TestExecOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
		env     []string
		want    taskservice.Request
		wantErr []string // substrings of the error (the cancel reason); nil = none checked
		wantMsg string
		snooze  time.Duration // the snooze asked for, about
	}{
		{name: "exit 0", command: "echo done", want: taskservice.RequestSuccess, wantMsg: "done"},
		{name: "one trailing newline trimmed", command: `printf 'a\n\n'`, want: taskservice.RequestSuccess, wantMsg: "a\n"},
		{name: "exit 75 retries", command: "echo partial; echo 'db busy' >&2; exit 75", want: taskservice.RequestRetry,
			wantErr: []string{`kind "mail"`, "exit code 75", "db busy"}, wantMsg: "partial"},
		{name: "exit 3 retries", command: "echo boom; printf 'first\\nlast line\\n\\n' >&2; exit 3",
			want: taskservice.RequestRetry, wantErr: []string{"exit code 3: last line"}, wantMsg: "boom"},
		{name: "exit 1 retries", command: "false", want: taskservice.RequestRetry, wantErr: []string{"exit code 1"}},
		{name: "exit 255 retries", command: "exit 255", want: taskservice.RequestRetry, wantErr: []string{"exit code 255"}},
		{name: "missing program retries", command: "exec /nonexistent/program", want: taskservice.RequestRetry,
			wantErr: []string{"exit code 127", "/nonexistent/program"}},
		{name: "killed by another signal retries", command: "kill -TERM $$", want: taskservice.RequestRetry,
			wantErr: []string{"signal: terminated"}},
		{name: "start failure retries", command: "true", env: []string{"BAD=a\x00b"}, want: taskservice.RequestRetry,
			wantErr: []string{"start /bin/sh"}},
		{name: "exit 90 is permanent", command: "echo 'no such user' >&2; exit 90", want: taskservice.RequestPermanent,
			wantErr: []string{"exit code 90 (permanent failure, not retried): no such user"}},
		{name: "exit $TASKD_EXIT_PERMANENT", command: `exit "$TASKD_EXIT_PERMANENT"`, want: taskservice.RequestPermanent,
			wantErr: []string{"exit code 90"}},
		{name: "exit 91 cancels", command: "echo bye; echo obsolete >&2; exit 91", want: taskservice.RequestCancel,
			wantErr: []string{"exit code 91 (cancel the task): obsolete"}, wantMsg: "bye"},
		{name: "exit $TASKD_EXIT_CANCEL", command: `exit "$TASKD_EXIT_CANCEL"`, want: taskservice.RequestCancel},
		{name: "exit 92 snoozes for stdout's last line", command: "echo working; echo 5m; exit 92",
			want: taskservice.RequestSnooze, wantMsg: "working\n5m", snooze: 5 * time.Minute},
		{name: "snooze in seconds", command: `echo 90; exit "$TASKD_EXIT_SNOOZE"`,
			want: taskservice.RequestSnooze, wantMsg: "90", snooze: 90 * time.Second},
		{name: "snooze without a duration: the default", command: "exit 92",
			want: taskservice.RequestSnooze, snooze: DefaultSnooze},
		{name: "snooze with a bad duration: the default", command: "echo soon; exit 92",
			want: taskservice.RequestSnooze, wantMsg: "soon", snooze: DefaultSnooze},
		{name: "snooze too long: 24 h", command: "echo 1000h; exit 92",
			want: taskservice.RequestSnooze, wantMsg: "1000h", snooze: taskservice.MaxHandlerDelay},
		{name: "snooze too short: 1 s", command: "echo 1ms; exit 92",
			want: taskservice.RequestSnooze, wantMsg: "1ms", snooze: taskservice.MinSnooze},
		{name: "snooze negative: the default", command: "echo -5s; exit 92",
			want: taskservice.RequestSnooze, wantMsg: "-5s", snooze: DefaultSnooze},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := time.Now()
			msg, err := runExec(t, context.Background(), NewExec(tc.command, ExecOptions{Env: tc.env}), testRun(""))
			after := time.Now()
			got, at := taskservice.Requested(err)
			if got != tc.want {
				t.Fatalf("err = %v asks for %s, want %s", err, got, tc.want)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %q, want it to contain %q", err, s)
				}
			}
			if tc.want == taskservice.RequestSnooze &&
				(at.Before(before.Add(tc.snooze)) || at.After(after.Add(tc.snooze))) {
				t.Errorf("snoozed until %s, want %s after the run (between %s and %s)", at, tc.snooze,
					before.Add(tc.snooze), after.Add(tc.snooze))
			}
			if msg != tc.wantMsg {
				t.Errorf("message = %q, want %q", msg, tc.wantMsg)
			}
		})
	}
}

// TestExecExitCodesInEnvironment: the command can read the codes instead
// of knowing them.
func TestExecExitCodesInEnvironment(t *testing.T) {
	t.Parallel()
	h := NewExec(`printf '%s ' "$TASKD_EXIT_RETRY" "$TASKD_EXIT_PERMANENT" "$TASKD_EXIT_CANCEL" "$TASKD_EXIT_SNOOZE"`,
		ExecOptions{Env: []string{"TASKD_EXIT_PERMANENT=1"}}) // the node's codes win
	msg, err := runExec(t, context.Background(), h, testRun(""))
	if err != nil {
		t.Fatalf("err = %v, want nil", err)
	}
	if want := "75 90 91 92 "; msg != want {
		t.Errorf("TASKD_EXIT_RETRY, _PERMANENT, _CANCEL, _SNOOZE = %q, want %q", msg, want)
	}
}

func TestExecWorkSetsMessage(t *testing.T) {
	t.Parallel()
	// Work is run plus SetMessage; the run's message is unexported, so this
	// only checks that Work hands the outcome on.
	run := testRun("")
	if err := NewExec("echo ok", ExecOptions{}).Work(context.Background(), run); err != nil {
		t.Fatalf("Work: %v", err)
	}
	if err := NewExec("exit 75", ExecOptions{}).Work(context.Background(), run); !taskservice.IsRetryable(err) {
		t.Fatalf("Work(exit 75) = %v, want a retryable error", err)
	}
}

func TestExecStdoutCapped(t *testing.T) {
	t.Parallel()
	// 1 MiB of output: the first 64 KiB are kept, the rest is read and
	// dropped, so the command is not blocked and exits 0.
	h := NewExec(`head -c 1048576 /dev/zero | tr '\0' x; echo done >&2`, ExecOptions{})
	msg, err := runExec(t, context.Background(), h, testRun(""))
	if err != nil {
		t.Fatalf("err = %v, want nil", err)
	}
	if len(msg) != maxMessage || strings.Trim(msg, "x") != "" {
		t.Errorf("message is %d bytes (%q...), want %d bytes of x", len(msg), msg[:min(len(msg), 20)], maxMessage)
	}
}

func TestExecTimeoutIsRetryable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := runExec(t, ctx, NewExec("sleep 30", ExecOptions{}), testRun(""))
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("returned after %v, want soon after the 100ms timeout", elapsed)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !taskservice.IsRetryable(err) ||
		!strings.Contains(err.Error(), "run timed out") {
		t.Errorf("err = %v, want a retryable error wrapping context.DeadlineExceeded that says the run timed out", err)
	}
}

func TestExecCancelledBeforeStartIsRetryable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := runExec(t, ctx, NewExec("true", ExecOptions{}), testRun(""))
	if !errors.Is(err, context.Canceled) || !taskservice.IsRetryable(err) {
		t.Errorf("err = %v, want a retryable error wrapping context.Canceled", err)
	}
}

// TestExecCancelKillsDescendants cancels a run whose shell started a
// background child, once the child is known to run, and checks that both are
// killed and the handler returns at once. The child holds a FIFO open, so
// end-of-file on the FIFO is the sign that it is gone.
func TestExecCancelKillsDescendants(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Our own writer keeps r from reading end-of-file before the shell opens
	// the FIFO.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := r.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The background child inherits fd 3 and is then its only holder.
	h := NewExec(`exec 3>"$FIFO"; sleep 30 & echo $! >&3; exec 3>&-; sleep 30`,
		ExecOptions{Env: []string{"FIFO=" + fifo}})
	done := make(chan error, 1)
	go func() {
		_, err := h.(*execHandler).run(ctx, testRun(""))
		done <- err
	}()

	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the background child's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("bad pid %q: %v", line, err)
	}
	defer func() {
		if t.Failed() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if elapsed := time.Since(start); elapsed > time.Second {
			t.Errorf("returned %v after the cancel, want at once", elapsed)
		}
		if !errors.Is(err, context.Canceled) || !taskservice.IsRetryable(err) ||
			!strings.Contains(err.Error(), "run cancelled") {
			t.Errorf("err = %v, want a retryable error wrapping context.Canceled that says the run was cancelled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("exec handler did not return within 5s of the cancel")
	}
	if _, err := io.ReadAll(br); err != nil {
		t.Errorf("background child %d still holds the FIFO after the cancel: %v", pid, err)
	}
}

// TestExecBackgroundChildHoldingStdout checks that a command that exits 0
// while a background child keeps stdout open succeeds after the wait delay
// instead of hanging, and that the child is killed when the run ends.
func TestExecBackgroundChildHoldingStdout(t *testing.T) {
	t.Parallel()
	h := NewExec(`sleep 30 & echo $!`, ExecOptions{}).(*execHandler)
	h.waitDelay = 100 * time.Millisecond
	requireChildGone(t, h, "the background child holding stdout gone after the run")
}

func TestMessageText(t *testing.T) {
	t.Parallel()
	euro := "\u20ac" // 3 bytes
	long := strings.Repeat("a", maxMessage-1) + euro
	tests := []struct {
		name      string
		in        string
		truncated bool
		want      string
	}{
		{"plain", "hello", false, "hello"},
		{"one newline trimmed", "hello\n\n", false, "hello\n"},
		{"invalid UTF-8 replaced", "a\xffb", false, "a\uFFFDb"},
		{"rune cut by the cap dropped", long[:maxMessage], true, strings.Repeat("a", maxMessage-1)},
		{"replacements kept within the cap", strings.Repeat("\xffa", maxMessage/2), false,
			strings.Repeat("\uFFFDa", maxMessage/4)},
	}
	for _, tc := range tests {
		if got := messageText([]byte(tc.in), tc.truncated); got != tc.want {
			t.Errorf("%s: messageText = %q (%d bytes), want %d bytes", tc.name, got[:min(len(got), 40)], len(got), len(tc.want))
		}
	}
}

func TestTailBufferLastLine(t *testing.T) {
	t.Parallel()
	w := &tailBuffer{limit: 8}
	for _, p := range []string{"first\n", "second line\n", "x\n", "end\n\n"} {
		_, _ = w.Write([]byte(p))
	}
	if len(w.buf) != 8 {
		t.Errorf("kept %d bytes, want 8", len(w.buf))
	}
	if got := w.lastLine(); got != "end" {
		t.Errorf("lastLine = %q, want %q", got, "end")
	}
}

// BenchmarkExecRun measures one run of a command that does nothing: the cost
// the handler adds around /bin/sh (the process group's watcher included).
func BenchmarkExecRun(b *testing.B) {
	h := NewExec("true", ExecOptions{}).(*execHandler)
	run := testRun("")
	for b.Loop() {
		if _, err := h.run(context.Background(), run); err != nil {
			b.Fatal(err)
		}
	}
}

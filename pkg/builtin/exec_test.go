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

func TestExecOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		command   string
		env       []string
		retryable bool
		wantErr   []string // substrings of the error; nil = success
		wantMsg   string
	}{
		{name: "exit 0", command: "echo done", wantMsg: "done"},
		{name: "one trailing newline trimmed", command: `printf 'a\n\n'`, wantMsg: "a\n"},
		{name: "exit 75 retries", command: "echo partial; echo 'db busy' >&2; exit 75", retryable: true,
			wantErr: []string{`kind "mail"`, "exit code 75", "db busy"}, wantMsg: "partial"},
		{name: "exit 3 is permanent", command: "printf 'first\\nlast line\\n\\n' >&2; exit 3",
			wantErr: []string{"exit code 3: last line"}},
		{name: "missing program is permanent", command: "exec /nonexistent/program",
			wantErr: []string{"exit code 127", "/nonexistent/program"}},
		{name: "killed by another signal is permanent", command: "kill -TERM $$",
			wantErr: []string{"signal: terminated"}},
		{name: "start failure is permanent", command: "true", env: []string{"BAD=a\x00b"},
			wantErr: []string{"start /bin/sh"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			msg, err := runExec(t, context.Background(), NewExec(tc.command, ExecOptions{Env: tc.env}), testRun(""))
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
			} else {
				if err == nil {
					t.Fatalf("err = nil, want an error containing %q", tc.wantErr)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("err = %q, want it to contain %q", err, s)
					}
				}
				if got := taskservice.IsRetryable(err); got != tc.retryable {
					t.Errorf("IsRetryable(%q) = %v, want %v", err, got, tc.retryable)
				}
			}
			if msg != tc.wantMsg {
				t.Errorf("message = %q, want %q", msg, tc.wantMsg)
			}
		})
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
	msg, err := runExec(t, context.Background(), h, testRun(""))
	if err != nil {
		t.Errorf("err = %v, want nil", err)
	}
	pid, perr := strconv.Atoi(msg)
	if perr != nil {
		t.Fatalf("message = %q, want the background child's pid", msg)
	}
	requireGone(t, "the background child holding stdout gone after the run", []int{pid})
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

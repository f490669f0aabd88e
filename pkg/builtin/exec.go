package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/taskd/taskd/pkg/taskservice"
)

const (
	// maxMessage is the most bytes of a command's stdout or a webhook's
	// response body kept as the run's message (the node's one limit on a
	// run's message); the rest is read and discarded.
	maxMessage = taskservice.MaxMessage
	// maxStderr is the most bytes of a command's stderr kept (the last ones),
	// to quote its last line in an error.
	maxStderr = 4 << 10
	// execWaitDelay bounds how long Wait waits for the output pipes after the
	// command exited or was killed, in case a descendant still holds them:
	// the group is killed only after the wait.
	execWaitDelay = 2 * time.Second
)

// ExecOptions configures an exec handler. The zero value is ready to use.
type ExecOptions struct {
	// Env holds extra "KEY=value" entries added to the node's environment.
	// The TASKD_* variables of the run take precedence over them.
	Env []string
	// Logger receives debug and warning lines; nil discards them.
	Logger hclog.Logger
}

type execHandler struct {
	command   string
	env       []string
	logger    hclog.Logger
	waitDelay time.Duration
}

// NewExec returns a handler that runs `/bin/sh -c command` once per run, in
// a process group of its own, with the run's payload on stdin and the node's
// environment plus opts.Env and TASKD_IDENTITY, TASKD_TASK_ID, TASKD_KIND,
// TASKD_RUN, TASKD_FENCE, TASKD_NODE and TASKD_ATTEMPT, the exit codes
// TASKD_EXIT_RETRY, TASKD_EXIT_PERMANENT, TASKD_EXIT_CANCEL and
// TASKD_EXIT_SNOOZE, and TRACEPARENT (the W3C trace context of the run's
// span) when the run is traced.
//
// The command's stdout (at most 64 KiB, one trailing newline trimmed)
// becomes the run's message, whatever its exit. Exit code 0 is a success.
// Any other exit, a death by a signal, or a failure to start the command
// is a failed attempt (ERROR), retried after the task's backoff up to its
// max_attempts, whose error quotes the last line of stderr; but
// ExitPermanent (90) is a failure not retried, ExitCancel (91) cancels the
// task, and ExitSnooze (92) runs the same fire time again after the
// duration on the last line of stdout without using an attempt (see
// outcomes.go). A missing program (the shell's exit 127) is retried like
// any failure: the node cannot tell it from a mount or a PATH not there
// yet, and max_attempts bounds it; a command that knows better exits
// ExitPermanent. When the run's context ends (task timeout or node stop),
// the whole process group is killed with SIGKILL and the run fails with a
// retryable error.
//
// On Unix, no process of the group outlives the run or the node: when the
// command exits, what it left running in the group is killed with SIGKILL,
// and if the node dies, even by SIGKILL, a watcher in the group kills the
// whole group at once, so a run taken over by another node never runs
// beside a leftover copy. A process that leaves the group (setsid, or
// setpgid to another group) is out of reach and not covered.
//
// No command starts once the node cannot prove its lease is live: the
// handler checks taskservice.LeaseProven right before it starts the
// command, and on Linux the command's own shell checks the node's lease
// deadline (taskservice.LeaseDeadline, on the boot clock of /proc/uptime)
// before it runs the command, so that a node paused between its last check
// and the fork cannot start it late. A command refused either way is
// reported as taskservice.ErrLeaseNotProven: it did not run, and the fire
// time runs again. The check adds TASKD_LEASE_DEADLINE_CS to the
// command's environment.
func NewExec(command string, opts ExecOptions) taskservice.Handler {
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &execHandler{
		command:   command,
		env:       append([]string(nil), opts.Env...),
		logger:    logger,
		waitDelay: execWaitDelay,
	}
}

// Work runs the command for run and sets its stdout as the run's message.
func (h *execHandler) Work(ctx context.Context, run *taskservice.Run) error {
	msg, err := h.run(ctx, run)
	if msg != "" {
		run.SetMessage(msg)
	}
	return err
}

// nodeEnviron is the node's environment without TRACEPARENT and
// TRACESTATE: a trace the node process was started in is not the run's, so
// a command of an untraced run must not join it (a traced run's command
// gets its own TRACEPARENT).
func nodeEnviron() []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TRACEPARENT=") && !strings.HasPrefix(kv, "TRACESTATE=") {
			out = append(out, kv)
		}
	}
	return out
}

// run runs the command and returns its stdout as a message, and the outcome.
func (h *execHandler) run(ctx context.Context, run *taskservice.Run) (string, error) {
	cmd, guard, guardEnv, err := guardCommand(ctx, h.command)
	if err != nil {
		return "", taskservice.Retry(fmt.Errorf("exec handler for kind %q: %w", run.Kind, err))
	}
	defer guard.close()
	cmd.Env = append(append(append(append(nodeEnviron(), h.env...), guardEnv...), exitCodeEnv...), // later entries win
		"TASKD_IDENTITY="+run.Identity,
		"TASKD_TASK_ID="+run.TaskID,
		"TASKD_KIND="+run.Kind,
		"TASKD_RUN="+strconv.FormatInt(run.RunNumber, 10),
		"TASKD_FENCE="+run.Fence.String(),
		"TASKD_NODE="+run.Node,
		"TASKD_ATTEMPT="+strconv.Itoa(run.Attempt),
	)
	if tp := taskservice.TraceParent(ctx); tp != "" {
		cmd.Env = append(cmd.Env, "TRACEPARENT="+tp) // the run's span, so the command can join its trace
	}
	stdin, err := payloadFile(run.Payload)
	if err != nil {
		return "", taskservice.Retry(fmt.Errorf("exec handler for kind %q: %w", run.Kind, err))
	}
	defer stdin.Close()
	cmd.Stdin = stdin
	stdout := &headBuffer{limit: maxMessage}
	stderr := &tailBuffer{limit: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	what := fmt.Sprintf("exec handler for kind %q", run.Kind)
	if ctx.Err() != nil {
		return "", taskservice.Retry(fmt.Errorf("%s: %s before the start: %w", what, ctxReason(ctx), ctx.Err()))
	}
	// A process group of its own, watched for the node's death, so that
	// whatever the command starts is killed with it: at a timeout, at a
	// stop, when the run ends and when the node dies.
	group, err := startGroup()
	if err != nil {
		// A pipe or a fork refused: the node's resources, for now.
		return "", taskservice.Retry(fmt.Errorf("%s: %w", what, err))
	}
	defer func() {
		if err := group.close(); err != nil {
			h.logger.Warn("exec: cannot kill what is left of the process group", "kind", run.Kind,
				"task", run.TaskID, "error", err)
		}
	}()
	group.join(cmd)
	var killed atomic.Bool
	cmd.Cancel = func() error {
		err := group.kill()
		if errors.Is(err, os.ErrProcessDone) {
			return err
		}
		if err != nil {
			h.logger.Warn("exec: cannot kill the process group", "kind", run.Kind,
				"task", run.TaskID, "error", err)
			return err
		}
		killed.Store(true)
		return nil
	}
	cmd.WaitDelay = h.waitDelay

	// The last moment before the command exists: if the node was paused
	// since it checked its lease (starting the group above takes a fork), it
	// may no longer own the identity, so nothing starts.
	if !taskservice.LeaseProven(ctx) {
		return "", taskservice.ErrLeaseNotProven
	}
	waitErr := cmd.Start()
	guard.started()
	if waitErr == nil {
		waitErr = cmd.Wait()
	}
	if guard.refused() {
		// The command's own shell found the lease deadline passed (the node
		// was paused since its check): the command did not run.
		return "", taskservice.ErrLeaseNotProven
	}
	if stdout.truncated {
		h.logger.Debug("exec stdout over the message cap, rest discarded",
			"kind", run.Kind, "task", run.TaskID, "cap", maxMessage)
	}
	msg := messageText(stdout.buf, stdout.truncated)
	if waitErr == nil {
		return msg, nil
	}

	detail := ""
	if line := stderr.lastLine(); line != "" {
		detail = ": " + line
	}
	var exitErr *exec.ExitError
	switch {
	case killed.Load() || (cmd.Process == nil && ctx.Err() != nil):
		return msg, taskservice.Retry(fmt.Errorf("%s: %s, process group killed: %w%s",
			what, ctxReason(ctx), ctx.Err(), detail))
	case errors.As(waitErr, &exitErr):
		return msg, exitOutcome(h.logger, run, what, exitErr, stdout.buf, detail)
	case errors.Is(waitErr, exec.ErrWaitDelay):
		// The shell exited 0 but something it started in the background
		// kept stdout or stderr open; its output after the delay is lost.
		h.logger.Warn("exec command exited 0 but a background process held its output open; stopped reading and killed it",
			"kind", run.Kind, "task", run.TaskID, "wait_delay", h.waitDelay)
		return msg, nil
	case cmd.Process == nil:
		// Most often a fork refused for the node's resources; a node without
		// /bin/sh fails every attempt, and max_attempts ends the task DEAD.
		return msg, taskservice.Retry(fmt.Errorf("%s: start /bin/sh: %w", what, waitErr))
	default:
		return msg, taskservice.Retry(fmt.Errorf("%s: %w%s", what, waitErr, detail))
	}
}

// payloadFile returns a file from which the command reads the whole
// payload as its stdin, filled before the command starts: the command then
// needs nothing from the node once it exists (a node paused right after the
// fork, which would otherwise still have to copy the payload into a pipe,
// cannot make a command that started in time do its work late). A payload
// that fits a pipe's buffer goes through a pipe; a larger one through a
// temporary file, removed at once.
func payloadFile(payload []byte) (*os.File, error) {
	if len(payload) <= pipePayloadMax {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
		_, err = w.Write(payload) // fits the pipe's buffer: never blocks
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = r.Close()
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
		return r, nil
	}
	f, err := os.CreateTemp("", "taskd-payload-*")
	if err != nil {
		return nil, fmt.Errorf("stdin file: %w", err)
	}
	_ = os.Remove(f.Name())
	if _, err := f.Write(payload); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("stdin file: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("stdin file: %w", err)
	}
	return f, nil
}

// pipePayloadMax is the largest payload sent through a pipe: below the
// smallest pipe buffer of a Unix system of interest (Linux: 64 KiB).
const pipePayloadMax = 16 << 10

// headBuffer keeps the first limit bytes written to it and discards the
// rest. It never fails, so a capped writer never blocks or breaks its source.
type headBuffer struct {
	buf       []byte
	limit     int
	truncated bool
}

func (w *headBuffer) Write(p []byte) (int, error) {
	if room := w.limit - len(w.buf); len(p) > room {
		w.truncated = true
		w.buf = append(w.buf, p[:max(room, 0)]...)
	} else {
		w.buf = append(w.buf, p...)
	}
	return len(p), nil
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	buf   []byte
	limit int
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= w.limit {
		w.buf = append(w.buf[:0], p[len(p)-w.limit:]...)
		return n, nil
	}
	if over := len(w.buf) + len(p) - w.limit; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	w.buf = append(w.buf, p...)
	return n, nil
}

// lastLine returns the last non-blank line held, as valid UTF-8.
func (w *tailBuffer) lastLine() string {
	return strings.ToValidUTF8(lastLine(w.buf), "\uFFFD")
}

// messageText turns captured output into a run message: one trailing newline
// trimmed, a rune cut in two by the cap dropped, and invalid UTF-8 replaced
// (run messages are protobuf strings). The result is at most maxMessage
// bytes.
func messageText(b []byte, truncated bool) string {
	if truncated {
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
			if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	s := strings.ToValidUTF8(string(bytes.TrimSuffix(b, []byte("\n"))), "\uFFFD")
	if len(s) > maxMessage { // replacement characters can make it longer
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// ctxReason says why ctx ended, for an error message.
func ctxReason(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "run timed out"
	}
	return "run cancelled"
}

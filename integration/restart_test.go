package integration

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// fileLines returns the non-empty lines of a file that handlers append to;
// a missing file has none.
func fileLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestKillAndRestartLosesNothing crashes a node with SIGKILL while a run is
// in flight and one-shot tasks are pending, restarts it under the same name
// and data directory, and checks that nothing is lost (contract §2.1, §2.3,
// §5.4): every one-shot completes, the periodic task goes on without
// duplicate successes, and the run in flight at the crash is recorded
// INTERRUPTED (naming the dead incarnation) and runs again with the same run
// number as a recovery.
func TestKillAndRestartLosesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fastFile := filepath.Join(dir, "fast.log")
	slowFile := filepath.Join(dir, "slow.log")

	// fast appends one line per run. slow appends a start line with its
	// pid (its own process group, see builtin.NewExec), then blocks on its
	// first start so that it is in flight at the kill; a second start of
	// the same task (the recovery) succeeds at once.
	fast := fmt.Sprintf(`echo "$TASKD_TASK_ID $TASKD_RUN $TASKD_FENCE" >> %s`, shellQuote(fastFile))
	slow := fmt.Sprintf(`echo "start $TASKD_TASK_ID $TASKD_RUN $$" >> %[1]s; `+
		`if [ "$(grep -c "^start $TASKD_TASK_ID " %[1]s)" -ge 2 ]; then echo recovered; exit 0; fi; exec sleep 60`,
		shellQuote(slowFile))
	// The first slow run is orphaned by the kill: end its process group.
	t.Cleanup(func() {
		for _, l := range fileLines(t, slowFile) {
			f := strings.Fields(l)
			if len(f) == 4 {
				if pid, err := strconv.Atoi(f[3]); err == nil && pid > 1 {
					_ = syscall.Kill(-pid, syscall.SIGKILL)
				}
			}
		}
	})

	opts := nodeOptions{
		name:    "crash-node",
		dataDir: filepath.Join(dir, "data"),
		extra:   []string{"--exec", "fast=" + fast, "--exec", "slow=" + slow},
	}
	first := startNode(t, opts)
	c := first.Client()
	ctx, cancel := rpcCtx()
	before, err := first.self(ctx)
	cancel()
	if err != nil || before == nil {
		t.Fatalf("ListNodes before the crash: %v, %v", before, err)
	}

	type ref struct{ identity, id string }
	var oneShots []ref
	for i := range 20 {
		identity := fmt.Sprintf("user-%d", i%5)
		delay := time.Duration(i) * 3 * time.Second / 20 // 0 to 2.85 s
		task := schedule(t, c, &taskdv1.TaskSpec{
			Identity: identity, Kind: "fast", Payload: []byte(strconv.Itoa(i)), Triggers: onceAfter(delay),
		})
		oneShots = append(oneShots, ref{identity, task.GetId()})
	}
	periodic := schedule(t, c, &taskdv1.TaskSpec{Identity: "ticker", Kind: "fast", Triggers: every(500 * time.Millisecond)})
	slowTask := schedule(t, c, &taskdv1.TaskSpec{Identity: "slowpoke", Kind: "slow", Triggers: onceAfter(0)})

	startLine := func(l string) (run string, ok bool) {
		f := strings.Fields(l)
		if len(f) == 4 && f[0] == "start" && f[1] == slowTask.GetId() {
			return f[2], true
		}
		return "", false
	}
	eventually(t, waitLong, "slow task started", func() error {
		for _, l := range fileLines(t, slowFile) {
			if _, ok := startLine(l); ok {
				return nil
			}
		}
		return errors.New("no start line yet")
	})
	pendingAtKill := 0
	for _, r := range oneShots {
		if task, err := getTask(c, r.identity, r.id); err == nil && task.GetState() != taskdv1.TaskState_TASK_STATE_COMPLETED {
			pendingAtKill++
		}
	}
	first.Kill()
	t.Logf("killed %s with %d of %d one-shot tasks not completed", first.opts.name, pendingAtKill, len(oneShots))

	restartAt := time.Now()
	second := startNode(t, opts)
	c = second.Client()

	// The node is RUNNING again under a new incarnation that began
	// dispatching after the restart.
	ctx, cancel = rpcCtx()
	after, err := second.self(ctx)
	cancel()
	switch {
	case err != nil || after == nil:
		t.Fatalf("ListNodes after the restart: %v, %v", after, err)
	case after.GetState() != taskdv1.NodeState_NODE_STATE_RUNNING:
		t.Errorf("node state after the restart = %s, want RUNNING", after.GetState())
	case after.GetIncarnation() == before.GetIncarnation():
		t.Errorf("incarnation after the restart = %s, the same as before", after.GetIncarnation())
	case after.GetDispatchStart() == nil || after.GetDispatchStart().AsTime().Before(restartAt):
		t.Errorf("dispatch_start after the restart = %v, want after %s", after.GetDispatchStart(), restartAt.Format(time.RFC3339Nano))
	}

	// The periodic task keeps running after the restart.
	p0, err := getTask(c, "ticker", periodic.GetId())
	if err != nil {
		t.Fatalf("GetTask(periodic): %v", err)
	}
	base := p0.GetRunCount()

	// Every one-shot task completes successfully and its handler ran.
	for _, r := range oneShots {
		task := waitTaskState(t, c, r.identity, r.id, taskdv1.TaskState_TASK_STATE_COMPLETED)
		if task.GetLastRun().GetOutcome() != taskdv1.Outcome_OUTCOME_SUCCESS {
			t.Errorf("one-shot %s/%s: last run %v, want SUCCESS%s", r.identity, r.id, task.GetLastRun(),
				describeRuns(mustListRuns(t, c, r.identity, r.id)))
		}
	}
	ran := map[string]int{}
	for _, l := range fileLines(t, fastFile) {
		ran[strings.Fields(l)[0]]++
	}
	for _, r := range oneShots {
		if ran[r.id] == 0 {
			t.Errorf("one-shot %s/%s completed but its handler left no line", r.identity, r.id)
		}
	}

	eventually(t, waitLong, "periodic task runs twice more after the restart", func() error {
		task, err := getTask(c, "ticker", periodic.GetId())
		if err != nil {
			return err
		}
		if task.GetRunCount() < base+2 {
			return fmt.Errorf("run_count %d, was %d after the restart", task.GetRunCount(), base)
		}
		return nil
	})
	runs := mustListRuns(t, c, "ticker", periodic.GetId())
	successes := map[int64]int{}
	after2 := map[int64]bool{}
	for _, r := range runs {
		if r.GetOutcome() == taskdv1.Outcome_OUTCOME_SUCCESS {
			successes[r.GetRunNumber()]++
			if !r.GetStartedAt().AsTime().Before(restartAt) {
				after2[r.GetRunNumber()] = true
			}
		}
	}
	for n, k := range successes {
		if k > 1 {
			t.Errorf("periodic task: run %d succeeded %d times%s", n, k, describeRuns(runs))
		}
	}
	if len(after2) < 2 {
		t.Errorf("periodic task: %d distinct successful runs after the restart, want at least 2%s", len(after2), describeRuns(runs))
	}

	// The slow run in flight at the kill ended INTERRUPTED, naming the dead
	// incarnation, and ran again at once with the same run number.
	slowDone := waitTaskState(t, c, "slowpoke", slowTask.GetId(), taskdv1.TaskState_TASK_STATE_COMPLETED)
	slowRuns := mustListRuns(t, c, "slowpoke", slowTask.GetId())
	var interrupted, recovered *taskdv1.Run
	for _, r := range slowRuns {
		switch {
		case r.GetOutcome() == taskdv1.Outcome_OUTCOME_INTERRUPTED:
			interrupted = r
		case r.GetOutcome() == taskdv1.Outcome_OUTCOME_SUCCESS && r.GetRecovery():
			recovered = r
		}
	}
	switch {
	case interrupted == nil:
		t.Errorf("slow task: no INTERRUPTED run%s", describeRuns(slowRuns))
	case !strings.Contains(interrupted.GetMessage(), before.GetIncarnation()):
		t.Errorf("slow task: INTERRUPTED message %q does not name the previous incarnation %s",
			interrupted.GetMessage(), before.GetIncarnation())
	case recovered == nil:
		t.Errorf("slow task: no successful recovery run%s", describeRuns(slowRuns))
	case recovered.GetRunNumber() != interrupted.GetRunNumber():
		t.Errorf("slow task: recovery run number %d, interrupted run %d%s",
			recovered.GetRunNumber(), interrupted.GetRunNumber(), describeRuns(slowRuns))
	case recovered.GetMessage() != "recovered":
		t.Errorf("slow task: recovery message %q, want %q", recovered.GetMessage(), "recovered")
	case slowDone.GetRunCount() != interrupted.GetRunNumber():
		t.Errorf("slow task: run_count %d, want %d (a recovery keeps the run number)", slowDone.GetRunCount(), interrupted.GetRunNumber())
	}
	var startRuns []string
	for _, l := range fileLines(t, slowFile) {
		if run, ok := startLine(l); ok {
			startRuns = append(startRuns, run)
		}
	}
	if len(startRuns) != 2 || startRuns[0] != startRuns[1] {
		t.Errorf("slow task start lines by run number = %v, want the same run number twice", startRuns)
	}
}

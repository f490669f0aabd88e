package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

var (
	chaosOnce sync.Once
	chaosBin  string
	chaosErr  error
)

// chaosTaskd builds ./cmd/taskd with the chaos tag (once per test binary),
// next to the normal binary, and returns its path.
func chaosTaskd(t *testing.T) string {
	t.Helper()
	chaosOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			chaosErr = err
			return
		}
		out := filepath.Join(filepath.Dir(taskdBin), "taskd-chaos")
		cmd := exec.Command("go", "build", "-tags", "chaos", "-o", out, "./cmd/taskd")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			chaosErr = fmt.Errorf("go build -tags chaos: %v\n%s", err, b)
			return
		}
		chaosBin = out
	})
	if chaosErr != nil {
		t.Fatal(chaosErr)
	}
	return chaosBin
}

// chaosFaults are the faults of TestRunsUnderRandomEtcdFaults, per etcd
// write (Put, Delete, Txn) of the node, after the seed.
const chaosFaults = "fail=0.1,ambiguous=0.1,delay=0.1:30ms"

// TestRunsUnderRandomEtcdFaults runs periodic tasks on a node whose etcd
// writes fail, are applied without the node learning it, or are delayed,
// at random: the tasks must keep running, no execution may repeat under the
// same fence, and no run may be committed SUCCESS twice.
func TestRunsUnderRandomEtcdFaults(t *testing.T) {
	t.Parallel()
	bin := chaosTaskd(t)
	cl := newCluster(t, "/chaos/")
	a := startUnderFaults(t, cl, bin)

	const n = 5
	tasks := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("chaos-%d", i)
		// A call hit by a fault fails; the test retries it like a client.
		eventually(t, waitLong, "schedule the task of "+id, func() error {
			ctx, cancel := rpcCtx()
			defer cancel()
			resp, err := a.Client().ScheduleTask(ctx, &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{
				Identity: id, Kind: "rec", Scope: taskdv1.Scope_SCOPE_IDENTITY, Triggers: every(100 * time.Millisecond)}})
			if err == nil {
				tasks[id] = resp.GetTask().GetId()
			}
			return err
		})
	}
	const runs = 20
	eventually(t, 2*waitLong, fmt.Sprintf("every task ran %d times", runs), func() error {
		per := byTask(cl.recLines())
		for id, task := range tasks {
			if len(per[task]) < runs {
				return fmt.Errorf("task of %s ran %d times", id, len(per[task]))
			}
		}
		return nil
	})
	lines := byTask(cl.recLines())
	repeated := 0
	for id, task := range tasks {
		var history []*taskdv1.Run
		eventually(t, waitLong, "list the runs of "+id, func() error {
			var err error
			history, err = listRuns(a.Client(), id, task)
			return err
		})
		repeated += checkRepeats(t, task, lines[task], history, "node-a")
	}
	t.Logf("runs executed more than once: %d", repeated)
}

// startUnderFaults starts node-a of cl from the chaos binary with
// chaosFaults. Start-up gives up at the first etcd error, so a start that an
// injected fault ended is tried again, as a supervisor would, with the next
// seed (the same seed would fail the same way).
func startUnderFaults(t *testing.T, cl *cluster, bin string) *taskd {
	t.Helper()
	for seed := 1; ; seed++ {
		opts := cl.opts("node-a")
		opts.bin = bin
		opts.env = []string{fmt.Sprintf("TASKD_CHAOS_FAULTS=seed=%d,%s", seed, chaosFaults)}
		p := launch(t, opts)
		err := p.waitRunning(waitLong)
		if err == nil {
			if !p.log.Contains("etcd fault injection is on") {
				t.Fatalf("the chaos build does not say that faults are on:\n%s", p.log.String())
			}
			return p
		}
		if !p.exited() || !p.log.Contains("etcdfault") || seed == 10 {
			t.Fatalf("node-a under faults (seed %d) did not become RUNNING: %v", seed, err)
		}
		t.Logf("start with seed %d ended by an injected fault; starting again", seed)
	}
}

package integration

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// signal sends sig to the worker's process.
func (w *worker) signal(sig syscall.Signal) {
	w.t.Helper()
	if err := w.cmd.Process.Signal(sig); err != nil {
		w.t.Fatalf("signal worker %s: %v", w.name, err)
	}
}

// A real worker process stopped by SIGSTOP while the node hands it runs of
// 200 KiB payloads: it neither reads (its flow-control window fills after
// two runs, and a send to it waits) nor heartbeats. The node cuts it off
// within three heartbeat intervals anyway, its runs end as failed attempts
// and are retried, and a second worker completes them all. The node's heap
// in use is reported before the stall, during it and after.
func TestStoppedWorkerIsCutOffAndItsRunsRetried(t *testing.T) {
	c := newCluster(t, "/workers-stop/")
	opts := c.opts("n1", "--worker-heartbeat", "500ms")
	n1 := startNode(t, opts)
	stopped := startWorker(t, "stopped", n1.listen)
	stopped.serving(1)
	heap := func() float64 { return value(scrape(t, n1.httpAddr), "go_memstats_heap_inuse_bytes") }
	before := heap()

	stopped.signal(syscall.SIGSTOP)
	defer stopped.signal(syscall.SIGCONT) // let it die of the cleanup's SIGKILL like any other
	payload := bytes.Repeat([]byte("p"), 200<<10)
	const tasks = 8 // the worker's concurrency: all of them go to it
	var ids []string
	for i := range tasks {
		spec := workerSpec(fmt.Sprintf("stall-%d", i), "count")
		spec.Payload = payload
		ids = append(ids, schedule(t, n1.Client(), spec).GetId())
	}
	eventually(t, waitLong, "the node hands the stopped worker its runs", func() error {
		if got := value(scrape(t, n1.httpAddr), "taskd_tasks", "state", "running"); got != tasks {
			return fmt.Errorf("%v running", got)
		}
		return nil
	})
	during := heap()
	eventually(t, waitLong, "the node cuts the stopped worker off", func() error {
		m := scrape(t, n1.httpAddr)
		cut := value(m, "taskd_workers_cut_off_total", "reason", "silent") + value(m, "taskd_workers_cut_off_total", "reason", "not_reading")
		if connected := value(m, "taskd_workers_connected"); cut < 1 || connected != 0 {
			return fmt.Errorf("%v cut off, %v connected", cut, connected)
		}
		return nil
	})

	live := startWorker(t, "live", n1.listen)
	live.serving(1)
	retried := 0
	for i, id := range ids {
		identity := fmt.Sprintf("stall-%d", i)
		waitTaskState(t, n1.Client(), identity, id, taskdv1.TaskState_TASK_STATE_COMPLETED)
		runs := mustListRuns(t, n1.Client(), identity, id)
		if successes(runs) != 1 {
			t.Fatalf("task %s: runs %v", id, runs)
		}
		for _, r := range runs {
			if r.GetOutcome() == taskdv1.Outcome_OUTCOME_ERROR {
				if !strings.Contains(r.GetMessage(), "went away") {
					t.Fatalf("task %s: a failed run %v", id, r)
				}
				retried++
			}
		}
	}
	if retried == 0 {
		t.Fatal("no run was retried: none was in flight on the stopped worker")
	}
	if got := len(stopped.lines("start ")); got != 0 {
		t.Fatalf("the stopped worker started %d runs", got)
	}
	after := heap()
	t.Logf("node heap in use: %.1f MiB before the stall, %.1f MiB with %d runs of %d KiB held for the stopped worker, %.1f MiB after (%d runs retried)",
		before/(1<<20), during/(1<<20), tasks, len(payload)>>10, after/(1<<20), retried)
}

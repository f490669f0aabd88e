package taskservice_test

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// stoppingHarness is newHarness with the node's debug log collected and a
// count of its lease renewals (the calls of its etcd client).
func stoppingHarness(t *testing.T) (*harness, *logLines, *etcdfault.Handle) {
	t.Helper()
	log := &logLines{}
	h := &harness{t: t, etcd: tst.StartEtcd(t), rec: &recorder{}, ev: &events{}}
	cli := h.etcd.Client(t)
	in := etcdfault.New()
	in.Wrap(cli)
	renewals := in.Add(etcdfault.Rule{Op: etcdfault.OpKeepAliveOnce}) // harms nothing: counts
	h.node = tst.StartNode(t, cli, taskservice.Config{
		Name:      "n1",
		Handlers:  map[string]taskservice.Handler{"rec": h.rec},
		Listeners: []taskservice.Listener{h.ev.listen},
		LeaseTTL:  2 * time.Second,
		Logger:    hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: log}),
	})
	return h, log, renewals
}

// stopWaiting is the node's log line once Stop waits for the runs in
// flight: its loops have stopped.
const stopWaiting = "stopping: waiting for the runs in flight"

// blockingRun makes the harness's "rec" handler block until release is
// closed (or its context ends), and schedules a run of it now; it returns
// the task once the handler was called. The handler's context error, if
// it ended that way, is sent on cancelled.
func blockingRun(t *testing.T, h *harness, release <-chan struct{}, cancelled chan<- error) *taskdv1.Task {
	t.Helper()
	started := make(chan struct{}, 1)
	h.rec.behave = func(ctx context.Context, _ *taskservice.Run, _ int) error {
		started <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			cancelled <- context.Cause(ctx)
			return ctx.Err()
		}
	}
	task := h.schedule(spec("held", "rec", now()))
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not start")
	}
	return task
}

// registration returns the node's registration key and its lease.
func registration(t *testing.T, cli *clientv3.Client, name string) (string, clientv3.LeaseID) {
	t.Helper()
	key := "/taskd/nodes/" + name
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("registration of %s: %v (%d keys)", name, err, len(resp.Kvs))
	}
	return key, clientv3.LeaseID(resp.Kvs[0].Lease)
}

// TestStopRenewsTheLeaseUntilTheRunsEnd stops a node whose run in flight
// goes on past the lease TTL: while Stop waits for it the lease is still
// renewed (a renewal is seen after Stop began, and the lease never lapses),
// and once the run ends Stop returns nil with the run committed SUCCESS.
// A Stop that ended the renewals first lost its lease while it waited.
func TestStopRenewsTheLeaseUntilTheRunsEnd(t *testing.T) {
	h, log, renewals := stoppingHarness(t)
	cli := h.etcd.Client(t)
	release := make(chan struct{})
	task := blockingRun(t, h, release, make(chan error, 1))
	_, lease := registration(t, cli, "n1")

	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stopped <- h.node.Stop(ctx)
	}()
	tst.Eventually(t, 10*time.Second, func() bool { return len(log.matching(time.Time{}, stopWaiting)) > 0 }, "Stop to wait for the run")
	// Renewals go on while Stop waits for the run; the lease never lapses.
	before := renewals.Seen()
	tst.Eventually(t, 10*time.Second, func() bool { return renewals.Seen() > before+1 },
		"lease renewals while Stop waits for the run (%d before)", before)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ttl, err := cli.TimeToLive(ctx, lease); err != nil || ttl.TTL <= 0 {
		t.Fatalf("the node's lease lapsed while Stop waited for the run: %v", err)
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}

	again := newHarnessOn(t, h.etcd, nil)
	again.waitState("held", task.Id, taskdv1.TaskState_TASK_STATE_COMPLETED)
	if runs := again.runs("held", task.Id); len(runs) != 1 || runs[0].Outcome != taskdv1.Outcome_OUTCOME_SUCCESS {
		t.Errorf("runs %v: want the run in flight at the stop committed SUCCESS", runs)
	}
}

// TestStopAfterTheLeaseIsLostIsClean revokes a stopping node's lease while
// Stop waits for a run: the run is cancelled (its outcome can no longer be
// committed), the node does not register again, and Stop returns nil: the
// record and the lease it would remove are gone already.
func TestStopAfterTheLeaseIsLostIsClean(t *testing.T) {
	h, log, _ := stoppingHarness(t)
	cli := h.etcd.Client(t)
	cancelled := make(chan error, 1)
	release := make(chan struct{})
	defer close(release)
	blockingRun(t, h, release, cancelled)
	key, lease := registration(t, cli, "n1")

	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stopped <- h.node.Stop(ctx)
	}()
	tst.Eventually(t, 10*time.Second, func() bool { return len(log.matching(time.Time{}, stopWaiting)) > 0 }, "Stop to wait for the run")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rev, err := cli.Revoke(ctx, lease)
	if err != nil {
		t.Fatalf("revoke the node's lease: %v", err)
	}
	select {
	case cause := <-cancelled:
		t.Logf("the run was cancelled: %v", cause)
	case <-time.After(20 * time.Second):
		t.Fatal("the run in flight was not cancelled after the lease was lost")
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop after the lease was lost: %v, want nil", err)
	}
	// Every write of the registration since the revoke, up to a marker
	// written now: none.
	marker := key + "~marker"
	if _, err := cli.Put(ctx, marker, "end"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = cli.Delete(context.Background(), marker) }()
	for resp := range cli.Watch(ctx, key, clientv3.WithPrefix(), clientv3.WithRev(rev.Header.Revision+1)) {
		if err := resp.Err(); err != nil {
			t.Fatalf("watch the registration: %v", err)
		}
		for _, ev := range resp.Events {
			if string(ev.Kv.Key) == marker {
				return
			}
			t.Errorf("the registration was written after the lease was lost: %s %q", ev.Type, ev.Kv.Value)
		}
	}
	t.Fatal("the watch of the registration ended before the marker")
}

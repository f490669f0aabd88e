package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// measureMemory stores tasks pending tasks (due in a day, with a 64-byte
// payload) for ids identities through one node, stops it, and starts a
// new node under the same name, which loads them all (contract §5.4). It
// returns the heap that node holds per pending task (live heap after a GC,
// before and after the load), and etcd's database growth per task. With
// profile set, the loaded node's heap profile is written there; with
// cpuprofile set, a CPU profile of its load to cpuprofile.load.
func measureMemory(ctx context.Context, etcdURL, prefix string, trigger func() *taskdv1.Trigger, tasks, ids, concurrency int, profile, cpuprofile string) (heapPerTask, etcdPerTask float64, loadTime time.Duration, err error) {
	cli, err := taskservice.DialEtcd([]string{etcdURL})
	if err != nil {
		return 0, 0, 0, err
	}
	defer cli.Close()
	dbBefore, err := dbInUse(ctx, cli, etcdURL)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := storePending(ctx, etcdURL, prefix, trigger, tasks, ids, concurrency); err != nil {
		return 0, 0, 0, err
	}
	dbAfter, err := dbInUse(ctx, cli, etcdURL)
	if err != nil {
		return 0, 0, 0, err
	}
	// The node loads them in a child process of its own, so that the
	// embedded etcd's memory (raft log, index) is not counted.
	args := []string{"-memory-child", etcdURL, "-memory-prefix", prefix, "-cold-after", coldAfter.String(), "-memory-child-profile", profile}
	if cpuprofile != "" {
		args = append(args, "-memory-child-cpuprofile", cpuprofile+".load")
	}
	out, err := exec.Command(os.Args[0], args...).Output()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("memory child: %w", err)
	}
	var child childResult
	if err := json.Unmarshal(out, &child); err != nil {
		return 0, 0, 0, fmt.Errorf("memory child said %q: %w", out, err)
	}
	return float64(child.HeapBytes) / float64(tasks), float64(dbAfter-dbBefore) / float64(tasks),
		time.Duration(child.LoadNanos), nil
}

// childResult is what the memory child reports.
type childResult struct {
	HeapBytes int64 `json:"heap_bytes"`
	LoadNanos int64 `json:"load_nanos"`
}

// memoryChild starts a node named "mem" over etcdURL under prefix, which
// loads every pending task mapped to that name, and prints the live heap it
// added and the load time; with profile set, it writes its heap profile
// there while the node is loaded, and with cpuprofile set a CPU profile
// of the load.
func memoryChild(etcdURL, prefix, profile, cpuprofile string) error {
	if profile != "" {
		runtime.MemProfileRate = 1 // every allocation, not a sample
	}
	ctx := context.Background()
	noop := taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil })
	before := liveHeap()
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	began := time.Now()
	nodes, stop, err := startNodes(ctx, etcdURL, prefix, []string{"mem"}, noop, nodeOptions{})
	if cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	load := time.Since(began)
	after := liveHeap()
	if profile != "" {
		if err := writeHeapProfile(profile); err != nil {
			stop()
			return err
		}
	}
	runtime.KeepAlive(nodes)
	stop()
	return json.NewEncoder(os.Stdout).Encode(childResult{HeapBytes: int64(after) - int64(before), LoadNanos: load.Nanoseconds()})
}

// storePending stores the tasks through a node of its own, stopped (and
// unreachable) when it returns, so that its memory is not counted.
func storePending(ctx context.Context, etcdURL, prefix string, trigger func() *taskdv1.Trigger, tasks, ids, concurrency int) error {
	noop := taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil })
	nodes, stop, err := startNodes(ctx, etcdURL, prefix, []string{"mem"}, noop, nodeOptions{})
	if err != nil {
		return err
	}
	defer stop()
	payload := make([]byte, 64)
	batches := (tasks + 99) / 100
	_, err = parallel(batches, concurrency, func(b int) error {
		var specs []*taskdv1.TaskSpec
		for i := b * 100; i < (b+1)*100 && i < tasks; i++ {
			specs = append(specs, &taskdv1.TaskSpec{
				Identity: fmt.Sprintf("mem-%07d", i%ids), Kind: "tick", Scope: taskdv1.Scope_SCOPE_IDENTITY,
				Payload:  payload,
				Triggers: []*taskdv1.Trigger{trigger()},
			})
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err := nodes[0].Schedule(cctx, specs)
		return err
	})
	if err != nil {
		return fmt.Errorf("store pending tasks: %w", err)
	}
	return nil
}

// onceIn is a trigger firing once, d from now.
func onceIn(d time.Duration) func() *taskdv1.Trigger {
	return func() *taskdv1.Trigger {
		return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{Delay: durationpb.New(d)}}}
	}
}

// dailyCron is a cron trigger firing every day at 03:00 in Berlin.
func dailyCron() *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Cron{Cron: &taskdv1.CronTrigger{Expression: "0 0 3 * * ?", TimeZone: "Europe/Berlin"}}}
}

// daily is a periodic trigger firing every day from a day from now.
func daily() *taskdv1.Trigger {
	return &taskdv1.Trigger{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{Interval: durationpb.New(24 * time.Hour)}}}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func liveHeap() uint64 {
	for range 3 {
		runtime.GC()
	}
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func dbInUse(ctx context.Context, cli *clientv3.Client, endpoint string) (int64, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := cli.Status(cctx, endpoint)
	if err != nil {
		return 0, fmt.Errorf("etcd status: %w", err)
	}
	if st.DbSizeInUse > 0 {
		return st.DbSizeInUse, nil
	}
	return st.DbSize, nil
}

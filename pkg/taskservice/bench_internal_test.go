package taskservice

import (
	"container/heap"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/pkg/etcdembed"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// BenchmarkTimerQueue measures the dispatch queue: queue an entry and pop
// the earliest, with 10,000 entries waiting.
func BenchmarkTimerQueue(b *testing.B) {
	var q timerQueue
	st := &identState{name: "q"}
	base := time.Now()
	for i := range 10000 {
		q.set(&entry{ident: st, id: fmt.Sprintf("%026d", i), idx: -1}, base.Add(time.Duration(i)*time.Millisecond))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		e := heap.Pop(&q).(*entry)
		q.set(e, base.Add(time.Duration(10000+i)*time.Millisecond))
	}
}

func benchRecord() *storev1.TaskRecord {
	now := time.Now()
	rec := &storev1.TaskRecord{
		Id: "01m8n00fnm1tq0b5anbv2qw959",
		Spec: &taskdv1.TaskSpec{Identity: "alice", Kind: "noop", Scope: taskdv1.Scope_SCOPE_IDENTITY,
			Payload:  make([]byte, 64),
			Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{At: timestamppb.New(now)}}}}},
		State: taskdv1.TaskState_TASK_STATE_SCHEDULED, CreatedAt: timestamppb.New(now),
	}
	record.InitTriggers(rec, nil)
	return rec
}

// BenchmarkRunStateMachine measures the record work of one run on the node:
// plan the start, fold the outcome, encode both writes.
func BenchmarkRunStateMachine(b *testing.B) {
	rec := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now()
		p := record.PlanStart(rec, "n1", "inc", 7, record.Timing{Now: now, Threshold: time.Minute, MaxCatchUp: 100})
		done := record.Clone(p.Rec)
		hist, _ := applyResult(done, p.Marker, runResult{outcome: taskdv1.Outcome_OUTCOME_SUCCESS, started: now, ended: now}, "n1", 0.5)
		if _, err := encodeBoth(p.Rec, done, hist); err != nil {
			b.Fatal(err)
		}
	}
}

func encodeBoth(a, c *storev1.TaskRecord, run *taskdv1.Run) (int, error) {
	var n int
	for _, r := range []*storev1.TaskRecord{a, c} {
		bb, err := proto.Marshal(r)
		if err != nil {
			return 0, err
		}
		n += len(bb)
	}
	bb, err := proto.Marshal(&storev1.RunRecord{Run: run})
	return n + len(bb), err
}

// BenchmarkCommitBatching compares fenced writes of the shape of a run's
// commit (two compares, two puts), 64 at a time against a real embedded
// etcd: each in its own Txn, and through the batcher.
func BenchmarkCommitBatching(b *testing.B) {
	ctx := context.Background()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: filepath.Join(b.TempDir(), "etcd"), ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cli, err := DialEtcd([]string{srv.ClientURL()})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	value := string(make([]byte, 256))
	write := func(i int) ([]clientv3.Cmp, []clientv3.Op) {
		a, c := fmt.Sprintf("/b/a/%09d", i), fmt.Sprintf("/b/c/%09d", i)
		return []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(a), "=", 0), clientv3.Compare(clientv3.ModRevision(c), "=", 0)},
			[]clientv3.Op{clientv3.OpPut(a, value), clientv3.OpPut(c, value)}
	}
	var next sync.Mutex
	i := 0 // across every call of every sub-benchmark: keys are never reused
	run := func(b *testing.B, one func(i int) error) {
		b.ResetTimer()
		b.SetParallelism(32) // 64 goroutines on 2 CPUs
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				next.Lock()
				i++
				k := i
				next.Unlock()
				if err := one(k); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("alone", func(b *testing.B) {
		base := 1 << 30
		run(b, func(i int) error {
			cmps, ops := write(base + i)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			resp, err := cli.Txn(cctx).If(cmps...).Then(ops...).Commit()
			if err == nil && !resp.Succeeded {
				return fmt.Errorf("write %d failed its compares", i)
			}
			return err
		})
	})
	b.Run("batched", func(b *testing.B) {
		bt := newBatcher(cli, 10*time.Second, etcdembed.MaxTxnOps, DefaultMaxRequestBytes, 2)
		defer bt.wait()
		base := 2 << 30
		run(b, func(i int) error {
			cmps, ops := write(base + i)
			out := bt.do(ctx, cmps, ops, nil)
			if out.err == nil && !out.ok {
				return fmt.Errorf("write %d failed its compares", i)
			}
			return out.err
		})
	})
}

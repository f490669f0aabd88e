package writepath

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/taskd/taskd/pkg/etcdembed"
)

// BenchmarkCommitBatching compares fenced writes of the shape of a run's
// commit (two compares, two puts), 64 at a time against a real embedded
// etcd: each in its own Txn, and through the Batcher.
func BenchmarkCommitBatching(b *testing.B) {
	ctx := context.Background()
	srv, err := etcdembed.Start(ctx, etcdembed.Config{Dir: filepath.Join(b.TempDir(), "etcd"), ClientURL: "http://127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.ClientURL()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
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
		bt := NewBatcher(cli, 10*time.Second, etcdembed.MaxTxnOps, DefaultMaxRequestBytes, 2)
		defer bt.Wait()
		base := 2 << 30
		run(b, func(i int) error {
			cmps, ops := write(base + i)
			out := bt.Do(ctx, Txn{If: cmps, Then: ops})
			if out.Err == nil && !out.OK {
				return fmt.Errorf("write %d failed its compares", i)
			}
			return out.Err
		})
	})
}

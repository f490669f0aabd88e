package taskservice

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// batcher groups the node's independent fenced writes (run starts, run
// commits, schedules) into shared Txns: etcd's cost is mostly per request,
// so many small Txns cost far more than one Txn of the same operations.
//
// Guarantee: an item's operations are applied only if all its compares
// hold, exactly as if it had its own Txn. A batch is If(every item's
// compares) Then(every item's operations); if it fails, each of its items
// is tried alone, with its Else operations, so the caller learns why its
// own compares failed. A batch never holds two writes of one key (etcd
// refuses those): an item that would add one waits for the next batch.
type batcher struct {
	cli     *clientv3.Client
	timeout time.Duration
	maxOps  int
	max     int // concurrent Txns

	mu     sync.Mutex
	queue  []*txnItem
	active int
	wg     sync.WaitGroup
}

// txnItem is one write with its own compares.
type txnItem struct {
	cmps []clientv3.Cmp
	ops  []clientv3.Op
	els  []clientv3.Op
	keys []string // keys written by ops, to keep a batch free of duplicates
	size int      // bytes of keys and values written
	done chan txnOutcome
}

// maxBatchBytes keeps a batch's request well under etcd's request limit
// (1.5 MiB by default); a larger item goes alone.
const maxBatchBytes = 1 << 20

// txnOutcome is what an item's Txn did.
type txnOutcome struct {
	ok   bool
	rev  int64
	els  []*etcdserverpb.ResponseOp // the Else responses when !ok
	err  error
	size int // items in the Txn that carried it (1 = alone)
}

func newBatcher(cli *clientv3.Client, timeout time.Duration, maxOps, concurrent int) *batcher {
	return &batcher{cli: cli, timeout: timeout, maxOps: maxOps, max: concurrent}
}

// do runs one item and waits for its outcome. ctx bounds the wait; the
// item's Txn has the batcher's own deadline.
func (b *batcher) do(ctx context.Context, cmps []clientv3.Cmp, ops, els []clientv3.Op) txnOutcome {
	it := &txnItem{cmps: cmps, ops: ops, els: els, done: make(chan txnOutcome, 1)}
	for _, op := range ops {
		it.keys = append(it.keys, string(op.KeyBytes()))
		it.size += len(op.KeyBytes()) + len(op.ValueBytes())
	}
	b.mu.Lock()
	b.queue = append(b.queue, it)
	if b.active < b.max {
		b.active++
		b.wg.Add(1)
		go b.drain()
	}
	b.mu.Unlock()
	select {
	case out := <-it.done:
		return out
	case <-ctx.Done():
		// The Txn may still be applied: report it as an unknown outcome.
		return txnOutcome{err: fmt.Errorf("waiting for a batched write: %w", ctx.Err())}
	}
}

// drain sends batches until the queue is empty.
func (b *batcher) drain() {
	defer b.wg.Done()
	for {
		batch := b.take()
		if len(batch) == 0 {
			return
		}
		b.send(batch)
	}
}

// take removes the next batch from the queue: items in order, skipping (for
// now) any that would write a key already in the batch, within maxOps
// operations and maxOps compares.
func (b *batcher) take() []*txnItem {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.active--
		return nil
	}
	var batch, rest []*txnItem
	keys := map[string]bool{}
	ops, cmps, size := 0, 0, 0
	for _, it := range b.queue {
		clash := false
		for _, k := range it.keys {
			if keys[k] {
				clash = true
				break
			}
		}
		fits := len(batch) == 0 || (ops+len(it.ops) <= b.maxOps && cmps+len(it.cmps) <= b.maxOps &&
			size+it.size <= maxBatchBytes)
		if clash || !fits {
			rest = append(rest, it)
			continue
		}
		for _, k := range it.keys {
			keys[k] = true
		}
		ops += len(it.ops)
		cmps += len(it.cmps)
		size += it.size
		batch = append(batch, it)
	}
	b.queue = rest
	return batch
}

// send commits one batch, and its items alone if the batch failed.
func (b *batcher) send(batch []*txnItem) {
	if len(batch) == 1 {
		batch[0].done <- b.alone(batch[0])
		return
	}
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	for _, it := range batch {
		cmps = append(cmps, it.cmps...)
		ops = append(ops, it.ops...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	resp, err := b.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	cancel()
	if err != nil {
		for _, it := range batch {
			it.done <- txnOutcome{err: err, size: len(batch)}
		}
		return
	}
	if resp.Succeeded {
		for _, it := range batch {
			it.done <- txnOutcome{ok: true, rev: resp.Header.Revision, size: len(batch)}
		}
		return
	}
	for _, it := range batch {
		it.done <- b.alone(it)
	}
}

// alone commits one item in a Txn of its own.
func (b *batcher) alone(it *txnItem) txnOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	resp, err := b.cli.Txn(ctx).If(it.cmps...).Then(it.ops...).Else(it.els...).Commit()
	if err != nil {
		return txnOutcome{err: err, size: 1}
	}
	if resp.Succeeded {
		return txnOutcome{ok: true, rev: resp.Header.Revision, size: 1}
	}
	return txnOutcome{els: resp.Responses, rev: resp.Header.Revision, size: 1}
}

// wait waits for the batches in flight (at Stop).
func (b *batcher) wait() { b.wg.Wait() }

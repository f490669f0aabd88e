package writepath

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Batcher groups the node's independent fenced writes (run starts, run
// commits, schedules) into shared Txns: etcd's cost is mostly per request,
// so many small Txns cost far more than one Txn of the same operations.
//
// Guarantee: an item's operations are applied only if all its compares
// hold, exactly as if it had its own Txn. A batch is one Txn whose Then
// holds one nested Txn per item, If(its compares) Then(its operations)
// Else(its Else operations): each item succeeds or fails on its own
// compares, all in one round trip and at one revision, and a failing item
// gets its Else responses so the caller learns why. A batch never holds two
// writes of one key (etcd refuses those): an item that would add one waits
// for the next batch.
//
// Every item is sized as etcd will size it (txnsize.go): a batch holds
// items while its encoded request stays within budget bytes and its
// operations, as etcd counts them, within maxOps. An item that cannot fit
// even alone is not sent and fails alone with ErrTooLarge; a batch that
// etcd (or the client) refuses for its size all the same is split in
// halves and sent again, down to the one item it refuses, which fails
// with ErrTooLarge. Neither is an error to retry: nothing was written.
type Batcher struct {
	cli     *clientv3.Client
	timeout time.Duration
	maxOps  int
	budget  int // bytes of one request (RequestBudget)
	max     int // concurrent Txns
	// observe is told the items of each Txn sent (Observe).
	observe func(items int)

	mu     sync.Mutex
	queue  []*txnItem
	active int
	wg     sync.WaitGroup
}

// txnItem is one write with its own compares.
type txnItem struct {
	txn      Txn
	cost     Cost
	deadline time.Time
	done     chan Outcome
}

// Outcome is what an item's Txn did.
type Outcome struct {
	OK   bool
	Rev  int64
	Else []*etcdserverpb.ResponseOp // the Else responses when !OK
	// Refusal names the Else responses when !OK (Txn.Refusal).
	Refusal Refusal
	Err     error
	Size    int // items in the Txn that carried it (1 = alone)
	// NotSent: Err is final and nothing was written (the caller's context
	// ended while the item still waited in the queue, or it was too large).
	NotSent bool
	// Late, with Err set and NotSent false, delivers the item's real
	// outcome once its Txn returns: the caller stopped waiting while the
	// Txn was on its way, so it may have been applied.
	Late <-chan Outcome
}

func NewBatcher(cli *clientv3.Client, timeout time.Duration, maxOps, maxRequestBytes, concurrent int) *Batcher {
	return &Batcher{cli: cli, timeout: timeout, maxOps: maxOps, budget: RequestBudget(maxRequestBytes),
		max: concurrent, observe: func(int) {}}
}

// Do runs one item and waits for its outcome, at most until ctx ends. The
// item's Txn is bounded by the Batcher's timeout and by ctx's deadline.
//
// If ctx ends before the item was sent, it is taken out of the queue and
// never sent (notSent). If it ends while the item's Txn is on its way, the
// outcome is unknown: err wraps ErrOutcomeUnknown and late brings the real
// outcome when the Txn returns.
//
// An item too large for any batch is not sent: err wraps ErrTooLarge
// (notSent).
func (b *Batcher) Do(ctx context.Context, t Txn) Outcome {
	it := &txnItem{txn: t, cost: t.Cost(), done: make(chan Outcome, 1)}
	if err := it.cost.tooLarge(b.budget, b.maxOps); err != nil {
		return Outcome{Err: err, NotSent: true, Size: 1}
	}
	if d, ok := ctx.Deadline(); ok {
		it.deadline = d
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
	}
	b.mu.Lock()
	for i, q := range b.queue {
		if q == it {
			b.queue = append(b.queue[:i:i], b.queue[i+1:]...)
			b.mu.Unlock()
			return Outcome{Err: fmt.Errorf("write not sent: %w", ctx.Err()), NotSent: true}
		}
	}
	b.mu.Unlock()
	return Outcome{Err: fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err()), Late: it.done}
}

// drain sends batches until the queue is empty.
func (b *Batcher) drain() {
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
// now) any that would write a key already written in the batch, while the
// batch's request stays within the byte budget and its operations, as
// etcd counts them (the items, plus the widest item), within maxOps.
func (b *Batcher) take() []*txnItem {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.active--
		return nil
	}
	var batch, rest []*txnItem
	var w batchWrites
	bytes, width, ops := 0, 0, 0
	for _, it := range b.queue {
		// A lone item was checked to fit by do. Besides etcd's limits, a
		// batch holds at most maxOps operations and nested Txns in all: a
		// larger Txn is slower to apply than two in flight.
		fits := len(batch) == 0 || (bytes+it.cost.nested <= b.budget && len(batch)+1+max(width, it.cost.width) <= b.maxOps &&
			ops+len(it.txn.Then)+1 <= b.maxOps)
		if !fits || w.clashes(it.cost) {
			rest = append(rest, it)
			continue
		}
		w.add(it.cost)
		bytes += it.cost.nested
		width = max(width, it.cost.width)
		ops += len(it.txn.Then) + 1
		batch = append(batch, it)
	}
	b.queue = rest
	return batch
}

// batchWrites is what a batch writes: keys, and ranges deleted.
type batchWrites struct {
	keys   map[string]bool
	ranges [][2]string
}

// clashes reports whether an item writes a key (or deletes a range) the
// batch writes already.
func (w *batchWrites) clashes(c Cost) bool {
	for _, k := range c.writes {
		if w.keys[k] {
			return true
		}
		for _, r := range w.ranges {
			if inRange(k, r) {
				return true
			}
		}
	}
	for _, r := range c.ranges {
		for k := range w.keys {
			if inRange(k, r) {
				return true
			}
		}
		for _, o := range w.ranges {
			if inRange(r[0], o) || inRange(o[0], r) {
				return true
			}
		}
	}
	return false
}

func (w *batchWrites) add(c Cost) {
	if w.keys == nil {
		w.keys = map[string]bool{}
	}
	for _, k := range c.writes {
		w.keys[k] = true
	}
	w.ranges = append(w.ranges, c.ranges...)
}

// send commits one batch: one Txn of one nested Txn per item. A batch
// refused for its size is sent again in halves.
func (b *Batcher) send(batch []*txnItem) {
	if len(batch) == 1 {
		batch[0].done <- b.alone(batch[0])
		return
	}
	ops := make([]clientv3.Op, len(batch))
	for i, it := range batch {
		ops[i] = it.txn.op()
	}
	ctx, cancel := b.txnCtx(batch...)
	b.observe(len(batch))
	resp, err := b.cli.Txn(ctx).Then(ops...).Commit()
	cancel()
	if err != nil {
		if refusedForSize(err) {
			// The sizing disagreed with etcd (a server whose
			// --max-request-bytes is below Config.MaxRequestBytes):
			// nothing was written, each half is tried on its own.
			b.send(batch[:len(batch)/2])
			b.send(batch[len(batch)/2:])
			return
		}
		for _, it := range batch {
			it.done <- Outcome{Err: Ambiguous(err), Size: len(batch)}
		}
		return
	}
	for i, it := range batch {
		var nested *etcdserverpb.TxnResponse
		if i < len(resp.Responses) {
			nested = resp.Responses[i].GetResponseTxn()
		}
		switch {
		case nested == nil: // cannot happen: etcd answers each op of Then
			it.done <- Outcome{Err: fmt.Errorf("%w: the batched Txn answered %d of %d items", ErrOutcomeUnknown, len(resp.Responses), len(batch)),
				Size: len(batch)}
		case nested.Succeeded:
			it.done <- Outcome{OK: true, Rev: resp.Header.Revision, Size: len(batch)}
		default:
			it.done <- Outcome{Else: nested.Responses, Refusal: it.txn.Refusal(nested.Responses), Rev: resp.Header.Revision, Size: len(batch)}
		}
	}
}

// alone commits one item in a Txn of its own.
func (b *Batcher) alone(it *txnItem) Outcome {
	ctx, cancel := b.txnCtx(it)
	defer cancel()
	b.observe(1)
	resp, err := it.txn.commit(ctx, b.cli)
	if err != nil {
		return Outcome{Err: Ambiguous(err), NotSent: refusedForSize(err), Size: 1}
	}
	if resp.Succeeded {
		return Outcome{OK: true, Rev: resp.Header.Revision, Size: 1}
	}
	return Outcome{Else: resp.Responses, Refusal: it.txn.Refusal(resp.Responses), Rev: resp.Header.Revision, Size: 1}
}

// txnCtx bounds a Txn by the Batcher's timeout and by the earliest
// deadline of its items: a run start, whose deadline is the end of the
// node's lease margin, must not be applied after that.
func (b *Batcher) txnCtx(items ...*txnItem) (context.Context, context.CancelFunc) {
	d := time.Now().Add(b.timeout)
	for _, it := range items {
		if !it.deadline.IsZero() && it.deadline.Before(d) {
			d = it.deadline
		}
	}
	return context.WithDeadline(context.Background(), d)
}

// Observe has f told the number of items of each Txn the Batcher sends
// (for metrics). Call it before the first Do.
func (b *Batcher) Observe(f func(items int)) { b.observe = f }

// Wait waits for the batches in flight (at Stop).
func (b *Batcher) Wait() { b.wg.Wait() }

package taskservice

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
)

// batcher groups the node's independent fenced writes (run starts, run
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
type batcher struct {
	cli     *clientv3.Client
	timeout time.Duration
	maxOps  int
	max     int // concurrent Txns
	// observe is told the items of each Txn sent (Config.Observer).
	observe func(items int)

	mu     sync.Mutex
	queue  []*txnItem
	active int
	wg     sync.WaitGroup
}

// txnItem is one write with its own compares.
type txnItem struct {
	cmps     []clientv3.Cmp
	ops      []clientv3.Op
	els      []clientv3.Op
	keys     []string // keys written by ops, to keep a batch free of duplicates
	size     int      // bytes of keys and values written
	deadline time.Time
	done     chan txnOutcome
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
	// notSent: err is final and nothing was written (the caller's context
	// ended while the item still waited in the queue).
	notSent bool
	// late, with err set and notSent false, delivers the item's real
	// outcome once its Txn returns: the caller stopped waiting while the
	// Txn was on its way, so it may have been applied.
	late <-chan txnOutcome
}

func newBatcher(cli *clientv3.Client, timeout time.Duration, maxOps, concurrent int) *batcher {
	return &batcher{cli: cli, timeout: timeout, maxOps: maxOps, max: concurrent, observe: func(int) {}}
}

// do runs one item and waits for its outcome, at most until ctx ends. The
// item's Txn is bounded by the batcher's timeout and by ctx's deadline.
//
// If ctx ends before the item was sent, it is taken out of the queue and
// never sent (notSent). If it ends while the item's Txn is on its way, the
// outcome is unknown: err wraps ErrOutcomeUnknown and late brings the real
// outcome when the Txn returns.
func (b *batcher) do(ctx context.Context, cmps []clientv3.Cmp, ops, els []clientv3.Op) txnOutcome {
	it := &txnItem{cmps: cmps, ops: ops, els: els, done: make(chan txnOutcome, 1)}
	if d, ok := ctx.Deadline(); ok {
		it.deadline = d
	}
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
	}
	b.mu.Lock()
	for i, q := range b.queue {
		if q == it {
			b.queue = append(b.queue[:i:i], b.queue[i+1:]...)
			b.mu.Unlock()
			return txnOutcome{err: fmt.Errorf("write not sent: %w", ctx.Err()), notSent: true}
		}
	}
	b.mu.Unlock()
	return txnOutcome{err: fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err()), late: it.done}
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
		// An item costs its operations plus the nested Txn that holds
		// them (etcd counts both against --max-txn-ops).
		fits := len(batch) == 0 || (ops+len(it.ops)+1 <= b.maxOps && cmps+len(it.cmps) <= b.maxOps &&
			size+it.size <= maxBatchBytes)
		if clash || !fits {
			rest = append(rest, it)
			continue
		}
		for _, k := range it.keys {
			keys[k] = true
		}
		ops += len(it.ops) + 1
		cmps += len(it.cmps)
		size += it.size
		batch = append(batch, it)
	}
	b.queue = rest
	return batch
}

// send commits one batch: one Txn of one nested Txn per item.
func (b *batcher) send(batch []*txnItem) {
	if len(batch) == 1 {
		batch[0].done <- b.alone(batch[0])
		return
	}
	ops := make([]clientv3.Op, len(batch))
	for i, it := range batch {
		ops[i] = clientv3.OpTxn(it.cmps, it.ops, it.els)
	}
	ctx, cancel := b.txnCtx(batch...)
	b.observe(len(batch))
	resp, err := b.cli.Txn(ctx).Then(ops...).Commit()
	cancel()
	if err != nil {
		for _, it := range batch {
			it.done <- txnOutcome{err: ambiguous(err), size: len(batch)}
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
			it.done <- txnOutcome{err: fmt.Errorf("%w: the batched Txn answered %d of %d items", ErrOutcomeUnknown, len(resp.Responses), len(batch)),
				size: len(batch)}
		case nested.Succeeded:
			it.done <- txnOutcome{ok: true, rev: resp.Header.Revision, size: len(batch)}
		default:
			it.done <- txnOutcome{els: nested.Responses, rev: resp.Header.Revision, size: len(batch)}
		}
	}
}

// alone commits one item in a Txn of its own.
func (b *batcher) alone(it *txnItem) txnOutcome {
	ctx, cancel := b.txnCtx(it)
	defer cancel()
	b.observe(1)
	resp, err := b.cli.Txn(ctx).If(it.cmps...).Then(it.ops...).Else(it.els...).Commit()
	if err != nil {
		return txnOutcome{err: ambiguous(err), size: 1}
	}
	if resp.Succeeded {
		return txnOutcome{ok: true, rev: resp.Header.Revision, size: 1}
	}
	return txnOutcome{els: resp.Responses, rev: resp.Header.Revision, size: 1}
}

// txnCtx bounds a Txn by the batcher's timeout and by the earliest
// deadline of its items: a run start, whose deadline is the end of the
// node's lease margin, must not be applied after that.
func (b *batcher) txnCtx(items ...*txnItem) (context.Context, context.CancelFunc) {
	d := time.Now().Add(b.timeout)
	for _, it := range items {
		if !it.deadline.IsZero() && it.deadline.Before(d) {
			d = it.deadline
		}
	}
	return context.WithDeadline(context.Background(), d)
}

// ambiguous marks a failed Txn whose outcome is unknown: etcd may have
// applied it all the same (a timeout or a lost connection after the request
// was sent). An error the server answered with (space quota, too many
// operations, a compare on a bad key) is definite and returned as it is.
func ambiguous(err error) error {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		switch ee.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Unknown:
		default:
			return err
		}
	}
	return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
}

// wait waits for the batches in flight (at Stop).
func (b *batcher) wait() { b.wg.Wait() }

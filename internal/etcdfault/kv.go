package etcdfault

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// kvWrapper judges Get, Put, Delete, Do and Txn calls. GetStream and
// Compact pass unharmed.
type kvWrapper struct {
	in *Injector
	kv clientv3.KV
}

func (w *kvWrapper) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	act := w.in.judge(Call{Op: OpGet, Keys: []string{key}})
	return perform(ctx, act, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return w.kv.Get(ctx, key, opts...)
	})
}

func (w *kvWrapper) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	act := w.in.judge(Call{Op: OpPut, Keys: []string{key}})
	return perform(ctx, act, func(ctx context.Context) (*clientv3.PutResponse, error) {
		return w.kv.Put(ctx, key, val, opts...)
	})
}

func (w *kvWrapper) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	act := w.in.judge(Call{Op: OpDelete, Keys: []string{key}})
	return perform(ctx, act, func(ctx context.Context) (*clientv3.DeleteResponse, error) {
		return w.kv.Delete(ctx, key, opts...)
	})
}

func (w *kvWrapper) GetStream(ctx context.Context, key string, opts ...clientv3.OpOption) (clientv3.GetStreamChan, error) {
	return w.kv.GetStream(ctx, key, opts...)
}

func (w *kvWrapper) Compact(ctx context.Context, rev int64, opts ...clientv3.CompactOption) (*clientv3.CompactResponse, error) {
	return w.kv.Compact(ctx, rev, opts...)
}

func (w *kvWrapper) Do(ctx context.Context, op clientv3.Op) (clientv3.OpResponse, error) {
	act := w.in.judge(opCall(op))
	return perform(ctx, act, func(ctx context.Context) (clientv3.OpResponse, error) {
		return w.kv.Do(ctx, op)
	})
}

func (w *kvWrapper) Txn(ctx context.Context) clientv3.Txn {
	return &txnWrapper{w: w, ctx: ctx}
}

// txnWrapper collects a Txn's parts and builds the real Txn at Commit, with
// the context the action chooses. Unlike etcd's Txn it does not check the
// order of If, Then and Else calls before Commit.
type txnWrapper struct {
	w           *kvWrapper
	ctx         context.Context
	cmps        []clientv3.Cmp
	thens, elss []clientv3.Op
}

func (t *txnWrapper) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.cmps = append(t.cmps, cs...)
	return t
}

func (t *txnWrapper) Then(ops ...clientv3.Op) clientv3.Txn {
	t.thens = append(t.thens, ops...)
	return t
}

func (t *txnWrapper) Else(ops ...clientv3.Op) clientv3.Txn {
	t.elss = append(t.elss, ops...)
	return t
}

func (t *txnWrapper) Commit() (*clientv3.TxnResponse, error) {
	act := t.w.in.judge(txnCall(t.cmps, t.thens, t.elss))
	return perform(t.ctx, act, func(ctx context.Context) (*clientv3.TxnResponse, error) {
		return t.w.kv.Txn(ctx).If(t.cmps...).Then(t.thens...).Else(t.elss...).Commit()
	})
}

func txnCall(cmps []clientv3.Cmp, thens, elss []clientv3.Op) Call {
	c := Call{Op: OpTxn}
	for i := range cmps {
		c.Keys = append(c.Keys, string(cmps[i].KeyBytes()))
	}
	for _, ops := range [][]clientv3.Op{thens, elss} {
		for _, op := range ops {
			if op.IsTxn() { // a nested Txn: its keys, in the same order
				c.Keys = append(c.Keys, txnCall(op.Txn()).Keys...)
				continue
			}
			c.Keys = append(c.Keys, string(op.KeyBytes()))
		}
	}
	return c
}

// opCall describes an Op given to Do.
func opCall(op clientv3.Op) Call {
	switch {
	case op.IsTxn():
		return txnCall(op.Txn())
	case op.IsPut():
		return Call{Op: OpPut, Keys: []string{string(op.KeyBytes())}}
	case op.IsDelete():
		return Call{Op: OpDelete, Keys: []string{string(op.KeyBytes())}}
	}
	return Call{Op: OpGet, Keys: []string{string(op.KeyBytes())}}
}

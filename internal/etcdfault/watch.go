package etcdfault

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// brokenReason is the CancelReason of the response that ends a broken watch.
const brokenReason = "etcdfault: watch broken by an injected fault"

// watchWrapper passes each watch's responses through the injector, event by
// event. RequestProgress and Close pass unharmed.
type watchWrapper struct {
	in *Injector
	w  clientv3.Watcher
}

// Watch starts the watch on etcd and a goroutine that forwards its
// responses. The goroutine ends, and the returned channel closes, when the
// etcd watch's channel closes, when ctx ends, or when the watch is broken.
func (w *watchWrapper) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	wctx, cancel := context.WithCancel(ctx)
	src := w.w.Watch(wctx, key, opts...)
	out := make(chan clientv3.WatchResponse)
	go w.forward(wctx, cancel, src, out)
	return out
}

func (w *watchWrapper) RequestProgress(ctx context.Context) error { return w.w.RequestProgress(ctx) }

func (w *watchWrapper) Close() error { return w.w.Close() }

func (w *watchWrapper) forward(ctx context.Context, cancel context.CancelFunc, src clientv3.WatchChan, out chan<- clientv3.WatchResponse) {
	defer close(out)
	// Cancelling ends the etcd watch too when the forwarding stops first.
	defer cancel()
	for {
		var resp clientv3.WatchResponse
		select {
		case r, ok := <-src:
			if !ok {
				return
			}
			resp = r
		case <-ctx.Done():
			return
		}
		if len(resp.Events) > 0 {
			var kept []*clientv3.Event
			var delay time.Duration
			broken := false
			for _, ev := range resp.Events {
				act := w.in.judge(Call{Op: OpWatch, Keys: []string{string(ev.Kv.Key)}})
				switch act.Kind {
				case KindDropEvents:
					continue
				case KindDelayEvents:
					delay = max(delay, act.Delay)
				case KindBreakWatch:
					broken = true
				}
				if broken {
					break
				}
				kept = append(kept, ev)
			}
			if broken {
				send(ctx, out, clientv3.WatchResponse{Header: resp.Header, Canceled: true, CancelReason: brokenReason})
				return
			}
			if len(kept) == 0 {
				continue
			}
			if delay > 0 && wait(ctx, delay) != nil {
				return
			}
			resp.Events = kept
		}
		if !send(ctx, out, resp) {
			return
		}
	}
}

// send delivers resp unless ctx ends first.
func send(ctx context.Context, out chan<- clientv3.WatchResponse, resp clientv3.WatchResponse) bool {
	select {
	case out <- resp:
		return true
	case <-ctx.Done():
		return false
	}
}

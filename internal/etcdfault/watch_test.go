package etcdfault_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdfault"
)

// next returns the next response of wc, failing the test if none comes.
func next(t *testing.T, wc clientv3.WatchChan) (clientv3.WatchResponse, bool) {
	t.Helper()
	select {
	case r, ok := <-wc:
		return r, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no watch response within 10 s")
	}
	return clientv3.WatchResponse{}, false
}

func put(t *testing.T, cli *clientv3.Client, key string) {
	t.Helper()
	if _, err := cli.Put(ctxFor(t, 5*time.Second), key, "v"); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func TestDropEventsHidesAPut(t *testing.T) {
	in, cli, plain := clients(t)
	h := in.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: "w/hidden", Action: etcdfault.DropEvents()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wc := cli.Watch(ctx, "w/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	if r, _ := next(t, wc); !r.Created {
		t.Fatalf("first response %+v, want the created notice", r)
	}
	// Both puts are one after the other: had the first event not been
	// dropped, it would come first.
	put(t, plain, "w/hidden")
	put(t, plain, "w/shown")
	r, ok := next(t, wc)
	if !ok || len(r.Events) != 1 || string(r.Events[0].Kv.Key) != "w/shown" {
		t.Fatalf("response %+v, want only the event of w/shown", r)
	}
	if h.Hits() != 1 {
		t.Fatalf("hits = %d, want 1", h.Hits())
	}
}

func TestDelayEventsKeepsOrder(t *testing.T) {
	in, cli, plain := clients(t)
	h := in.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: "w/slow", Action: etcdfault.DelayEvents(50 * time.Millisecond)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wc := cli.Watch(ctx, "w/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	next(t, wc)
	put(t, plain, "w/slow")
	put(t, plain, "w/fast")
	var keys []string
	for len(keys) < 2 {
		r, ok := next(t, wc)
		if !ok {
			t.Fatal("watch closed")
		}
		for _, ev := range r.Events {
			keys = append(keys, string(ev.Kv.Key))
		}
	}
	if keys[0] != "w/slow" || keys[1] != "w/fast" || h.Hits() != 1 {
		t.Fatalf("events %q, hits %d; want w/slow then w/fast, 1 hit", keys, h.Hits())
	}
}

func TestBreakWatchEndsTheWatch(t *testing.T) {
	in, cli, plain := clients(t)
	in.Add(etcdfault.Rule{Op: etcdfault.OpWatch, Prefix: "w/break", Action: etcdfault.BreakWatch()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wc := cli.Watch(ctx, "w/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	next(t, wc)
	put(t, plain, "w/before")
	if r, _ := next(t, wc); len(r.Events) != 1 || string(r.Events[0].Kv.Key) != "w/before" {
		t.Fatalf("response %+v, want the event of w/before", r)
	}
	put(t, plain, "w/break")
	r, ok := next(t, wc)
	if !ok || !r.Canceled || r.Err() == nil {
		t.Fatalf("response %+v (open %v), want a canceled response with an error", r, ok)
	}
	if _, ok := next(t, wc); ok {
		t.Fatal("the watch channel is still open after the break")
	}
}

func TestWatchStopsWithTheCallersContext(t *testing.T) {
	_, cli, _ := clients(t)
	ctx, cancel := context.WithCancel(context.Background())
	wc := cli.Watch(ctx, "w/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	next(t, wc)
	cancel()
	// The channel closes (goleak checks that its goroutine ended too).
	for {
		if _, ok := next(t, wc); !ok {
			return
		}
	}
}

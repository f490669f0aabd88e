// Package startstop owns long-lived goroutines: a Group starts named loops,
// each a func(ctx), and stops them all at once; a Lifecycle is a node's
// groups and contexts in the order its Stop ends them (lifecycle.go).
//
// Guarantee: Stop cancels the context every loop of the group was given and
// returns only once every loop started in the group has returned; after
// Stop (or Cancel) has begun, Go starts nothing. Done is closed once the
// group was cancelled and its last loop has returned, so a loop may cancel
// its own group without waiting for itself. A loop that panics has its name
// logged before the panic goes on; while Stop waits longer than the group's
// slow-stop bound, the names of the loops still running are logged (and
// Stop goes on waiting).
//
// Lock: a Group's mutex guards which loops run (their names and count) and
// whether the group was cancelled; Stop waits for the loops without holding
// it. A Lifecycle's guards whether the node started and stopped, a leaf.
package startstop

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Group is a set of loops started and stopped together. Create it with New.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	log    hclog.Logger
	slow   time.Duration

	mu        sync.Mutex
	cancelled bool
	running   map[string]int // loops running, by name
	count     int
	done      chan struct{}
}

// New returns a group whose loops get a context derived from parent
// (cancelled by Stop, Cancel, or parent). slowStop is how long Stop waits
// before it logs the loops still running (and again every slowStop after);
// zero never logs.
func New(parent context.Context, log hclog.Logger, slowStop time.Duration) *Group {
	ctx, cancel := context.WithCancel(parent)
	return &Group{ctx: ctx, cancel: cancel, log: log, slow: slowStop,
		running: map[string]int{}, done: make(chan struct{})}
}

// Go starts loop in a goroutine of the group, under name, and reports
// whether it did: once the group is cancelled it starts nothing. loop must
// return when its context ends.
func (g *Group) Go(name string, loop func(ctx context.Context)) bool {
	g.mu.Lock()
	if g.cancelled {
		g.mu.Unlock()
		return false
	}
	g.running[name]++
	g.count++
	g.mu.Unlock()
	go func() {
		defer g.exit(name)
		defer func() {
			if r := recover(); r != nil {
				g.log.Error("loop panicked", "loop", name, "panic", fmt.Sprint(r))
				panic(r)
			}
		}()
		loop(g.ctx)
	}()
	return true
}

func (g *Group) exit(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[name]--; g.running[name] == 0 {
		delete(g.running, name)
	}
	g.count--
	if g.cancelled && g.count == 0 {
		close(g.done)
	}
}

// Cancel cancels the loops' context and refuses new loops, without waiting
// for the loops to return (see Done). A loop of the group may call it.
func (g *Group) Cancel() {
	g.mu.Lock()
	if !g.cancelled {
		g.cancelled = true
		if g.count == 0 {
			close(g.done)
		}
	}
	g.mu.Unlock()
	g.cancel()
}

// Stop cancels the loops and waits until every one has returned. A loop of
// the group must not call it: it would wait for itself.
func (g *Group) Stop() {
	g.Cancel()
	if g.slow <= 0 {
		<-g.done
		return
	}
	t := time.NewTimer(g.slow)
	defer t.Stop()
	for {
		select {
		case <-g.done:
			return
		case <-t.C:
			g.log.Warn("loops still running after stop", "loops", g.Running())
			t.Reset(g.slow)
		}
	}
}

// Done is closed once the group was cancelled (by Stop or Cancel) and every
// loop has returned.
func (g *Group) Done() <-chan struct{} { return g.done }

// Running returns the names of the loops running now, sorted.
func (g *Group) Running() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Sorted(maps.Keys(g.running))
}

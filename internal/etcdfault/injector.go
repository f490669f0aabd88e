package etcdfault

import (
	"fmt"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Injector decides, call by call, which fault (if any) a wrapped client's
// call suffers. It is safe for concurrent use; rules can be added and
// removed while calls are in flight (a call is judged once, when it starts).
type Injector struct {
	mu     sync.Mutex
	rules  []*Handle
	random *randomFaults
}

// New returns an Injector without rules: wrapped calls pass unharmed.
func New() *Injector { return &Injector{} }

// Wrap replaces cli's KV, Lease and Watcher with wrappers that consult in.
// Everything else of cli (Cluster, Maintenance, Close) is unchanged. Wrap a
// client the test owns, before it is shared.
func (in *Injector) Wrap(cli *clientv3.Client) {
	cli.KV = &kvWrapper{in: in, kv: cli.KV}
	cli.Lease = &leaseWrapper{in: in, lease: cli.Lease}
	cli.Watcher = &watchWrapper{in: in, w: cli.Watcher}
}

// Rule chooses calls and says what happens to them.
type Rule struct {
	Op     Op              // the kind of call; OpAny matches all
	Prefix string          // matches when any key of the call starts with Prefix ("" = any call)
	Match  func(Call) bool // optional extra predicate
	After  int             // let the first After matching calls through unharmed
	Times  int             // then harm this many matching calls (0 = every one)
	Action Action
}

// Handle is a rule added to an Injector.
type Handle struct {
	in   *Injector
	rule Rule
	seen int // matching calls (guarded by in.mu)
	hits int // harmed calls (guarded by in.mu)
}

// Add adds r after the rules already added. Every rule that matches a call
// counts it as seen; the first one that chooses to harm it decides the
// action, and later rules do not harm it. Add panics if r's action does not
// fit its Op: watch actions (DropEvents, DelayEvents, BreakWatch) need OpWatch
// or OpAny, call actions need an Op other than OpWatch.
func (in *Injector) Add(r Rule) *Handle {
	if r.Action.isWatch() != (r.Op == OpWatch) && !(r.Op == OpAny && r.Action.isWatch()) {
		panic(fmt.Sprintf("etcdfault: action kind %d does not apply to op %s", r.Action.Kind, r.Op))
	}
	h := &Handle{in: in, rule: r}
	in.mu.Lock()
	in.rules = append(in.rules, h)
	in.mu.Unlock()
	return h
}

// Remove removes the rule; calls judged from now on ignore it.
func (h *Handle) Remove() {
	h.in.mu.Lock()
	defer h.in.mu.Unlock()
	for i, r := range h.in.rules {
		if r == h {
			h.in.rules = append(h.in.rules[:i:i], h.in.rules[i+1:]...)
			return
		}
	}
}

// Seen returns how many calls (or watch events) matched the rule so far.
func (h *Handle) Seen() int {
	h.in.mu.Lock()
	defer h.in.mu.Unlock()
	return h.seen
}

// Hits returns how many calls (or watch events) the rule harmed so far.
func (h *Handle) Hits() int {
	h.in.mu.Lock()
	defer h.in.mu.Unlock()
	return h.hits
}

func (r *Rule) matches(c Call) bool {
	if r.Op != OpAny && r.Op != c.Op {
		return false
	}
	// Watch actions judge events, call actions judge calls.
	if r.Action.isWatch() != (c.Op == OpWatch) {
		return false
	}
	if r.Prefix != "" {
		hit := false
		for _, k := range c.Keys {
			if strings.HasPrefix(k, r.Prefix) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return r.Match == nil || r.Match(c)
}

// judge returns the action for call c (KindNone: unharmed), counting it in
// the rules it matches. The Random faults, if set, judge only calls no
// rule harmed.
func (in *Injector) judge(c Call) Action {
	in.mu.Lock()
	defer in.mu.Unlock()
	var act Action
	for _, h := range in.rules {
		if !h.rule.matches(c) {
			continue
		}
		h.seen++
		if act.Kind != KindNone || h.seen <= h.rule.After {
			continue
		}
		if h.rule.Times > 0 && h.hits >= h.rule.Times {
			continue
		}
		h.hits++
		act = h.rule.Action
	}
	if act.Kind == KindNone && in.random != nil {
		act = in.random.judge(c)
	}
	return act
}

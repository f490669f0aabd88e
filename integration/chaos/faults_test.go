//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Fault kinds, as counted in the report.
const (
	faultTaskdKill      = "taskd SIGKILL+restart"
	faultTaskdStop      = "taskd SIGSTOP past lease+SIGCONT"
	faultTaskdTerm      = "taskd SIGTERM(drain)+restart"
	faultEtcdKill       = "etcd member SIGKILL+restart"
	faultEtcdStop       = "etcd member SIGSTOP+SIGCONT"
	faultEtcdLeaderKill = "etcd leader SIGKILL+restart"
	faultEtcdLeaderStop = "etcd leader SIGSTOP+SIGCONT"
	faultMoveStorm      = "MoveIdentity storm"
)

// faultWeights is the mix of the fault schedule.
var faultWeights = []struct {
	kind   string
	weight int
}{
	{faultTaskdKill, 20},
	{faultTaskdStop, 12},
	{faultTaskdTerm, 12},
	{faultEtcdKill, 10},
	{faultEtcdStop, 10},
	{faultEtcdLeaderKill, 10},
	{faultEtcdLeaderStop, 8},
	{faultMoveStorm, 18},
}

// injector applies faults one at a time on a seeded schedule; after each
// fault every process is up again (a restarted process RUNNING or serving)
// before the next one, so at most one taskd and one etcd member are ever
// down, and the etcd cluster keeps its quorum except while its leader is
// being replaced.
type injector struct {
	rng      *rand.Rand
	cluster  *etcdCluster
	nodes    []*taskdNode
	work     *workload
	leaseTTL time.Duration
	logf     func(format string, args ...any)

	// cli reads etcd's current revision around a taskd pause.
	cli *clientv3.Client

	mu       sync.Mutex
	counts   map[string]int
	failures []string // recoveries that did not happen: findings
	pauses   []pausePastLease
	unread   int // pauses whose revisions could not be read (not checked)
}

// pausePastLease is a taskd process paused longer than its lease: etcd's
// revision read just before SIGSTOP and just before SIGCONT.
type pausePastLease struct {
	node            string
	stopped, cont   time.Time
	revStop, revCon int64
}

// revision reads etcd's current revision.
func (in *injector) revision(ctx context.Context) (int64, error) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := in.cli.Get(rctx, "chaos-revision")
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

func (in *injector) pickKind() string {
	total := 0
	for _, f := range faultWeights {
		total += f.weight
	}
	x := in.rng.IntN(total)
	for _, f := range faultWeights {
		if x < f.weight {
			return f.kind
		}
		x -= f.weight
	}
	panic("unreachable")
}

// run injects n faults spread over d: fault i is due at a seeded instant in
// the i-th of n equal slots of d; one that comes due while the previous
// fault is still going waits for it. It returns when the last fault is
// over or ctx ends.
func (in *injector) run(ctx context.Context, n int, d time.Duration) {
	began := time.Now()
	slot := d / time.Duration(n)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		due := began.Add(slot*time.Duration(i) + time.Duration(in.rng.Int64N(int64(slot))))
		pause(ctx, time.Until(due))
		if ctx.Err() != nil {
			return
		}
		kind := in.pickKind()
		start := time.Now()
		detail, err := in.inject(ctx, kind)
		in.mu.Lock()
		in.counts[kind]++
		if err != nil && ctx.Err() == nil {
			in.failures = append(in.failures, fmt.Sprintf("%s %s: %v", kind, detail, err))
		}
		in.mu.Unlock()
		in.logf("fault %d/%d at %s: %s %s (%s)%s", i+1, n, start.Format("15:04:05.000"), kind, detail,
			time.Since(start).Round(time.Millisecond), errSuffix(err))
	}
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// inject applies one fault and waits for the recovery it needs.
func (in *injector) inject(ctx context.Context, kind string) (string, error) {
	switch kind {
	case faultTaskdKill:
		n := in.nodes[in.rng.IntN(len(in.nodes))]
		if err := n.current().kill(); err != nil {
			return n.name, err
		}
		return n.name, n.start(ctx)
	case faultTaskdStop:
		n := in.nodes[in.rng.IntN(len(in.nodes))]
		// Past the lease: the node's identities are reassigned meanwhile,
		// and it must start nothing of theirs after SIGCONT.
		d := in.leaseTTL + time.Duration(500+in.rng.IntN(1500))*time.Millisecond
		p := n.current()
		rec := pausePastLease{node: n.name}
		revStop, errStop := in.revision(ctx)
		rec.stopped = time.Now()
		if err := p.signal(syscall.SIGSTOP); err != nil {
			return n.name, err
		}
		pause(ctx, d)
		revCont, errCont := in.revision(ctx)
		rec.cont = time.Now()
		err := p.signal(syscall.SIGCONT)
		in.mu.Lock()
		if errStop == nil && errCont == nil {
			rec.revStop, rec.revCon = revStop, revCont
			in.pauses = append(in.pauses, rec)
		} else {
			in.unread++
		}
		in.mu.Unlock()
		return fmt.Sprintf("%s for %s", n.name, d), err
	case faultTaskdTerm:
		n := in.nodes[in.rng.IntN(len(in.nodes))]
		p := n.current()
		if err := p.signal(syscall.SIGTERM); err != nil {
			return n.name, err
		}
		if !p.waitExit(exitTimeout) {
			_ = p.kill()
			return n.name, fmt.Errorf("did not exit within %s of SIGTERM", exitTimeout)
		}
		return n.name, n.start(ctx)
	case faultEtcdKill:
		m := in.cluster.members[in.rng.IntN(len(in.cluster.members))]
		return m.cfg.Name, m.restart(ctx)
	case faultEtcdStop:
		m := in.cluster.members[in.rng.IntN(len(in.cluster.members))]
		return in.pauseMember(ctx, m)
	case faultEtcdLeaderKill:
		m, err := in.cluster.leader(ctx)
		if err != nil {
			return "", err
		}
		return m.cfg.Name + " (leader)", m.restart(ctx)
	case faultEtcdLeaderStop:
		m, err := in.cluster.leader(ctx)
		if err != nil {
			return "", err
		}
		detail, err := in.pauseMember(ctx, m)
		return detail + " (leader)", err
	case faultMoveStorm:
		return in.moveStorm(ctx)
	}
	return "", fmt.Errorf("unknown fault %q", kind)
}

// pauseMember stops an etcd member for 0.5-3 s, then continues it and waits
// until it serves again.
func (in *injector) pauseMember(ctx context.Context, m *etcdMember) (string, error) {
	d := time.Duration(500+in.rng.IntN(2500)) * time.Millisecond
	p := m.current()
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return m.cfg.Name, err
	}
	pause(ctx, d)
	detail := fmt.Sprintf("%s for %s", m.cfg.Name, d)
	if err := p.signal(syscall.SIGCONT); err != nil {
		return detail, err
	}
	return detail, m.waitServing(ctx)
}

// moveStorm sends 20-60 MoveIdentity calls at once over identities that
// have tasks, to random nodes, through random nodes.
func (in *injector) moveStorm(ctx context.Context) (string, error) {
	ids := in.work.usedIdentities()
	if len(ids) == 0 {
		return "no identities yet", nil
	}
	n := 20 + in.rng.IntN(41)
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = in.rng.Uint64()
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seeds[i], uint64(i)))
			if in.work.move(ctx, r, ids[r.IntN(len(ids))]) {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return fmt.Sprintf("%d moves, %d acknowledged", n, ok), nil
}

// restoreAll continues paused processes and starts any that are down, so
// that the cluster settles with every process up.
func (in *injector) restoreAll(ctx context.Context) error {
	for _, m := range in.cluster.members {
		m.current().resume()
		if !m.current().alive() {
			if err := m.restart(ctx); err != nil {
				return err
			}
		}
	}
	for _, n := range in.nodes {
		p := n.current()
		p.resume()
		if !p.alive() {
			if err := n.start(ctx); err != nil {
				return err
			}
			continue
		}
		if err := n.waitRunning(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

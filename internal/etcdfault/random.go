package etcdfault

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Probabilities are the chances, per Put, Delete and Txn call, of each
// random fault. Their sum must not exceed 1; the rest of the calls pass.
type Probabilities struct {
	Fail        float64
	Ambiguous   float64
	DelayBefore float64
	DelayAfter  float64
	Delay       time.Duration // how long the delay faults wait
}

// randomFaults draws one number per judged call from a seeded source.
// It is guarded by the Injector's mutex.
type randomFaults struct {
	rng *rand.Rand
	p   Probabilities
}

// Random adds seeded random faults for chaos testing: every Put, Delete and
// Txn call that no rule harms fails, gets an ambiguous outcome or is
// delayed with the chances p gives. One number is drawn per such call, so
// for a given seed the faults depend only on the order of the calls.
// Random replaces an earlier Random; it panics if p's chances are negative
// or sum to more than 1.
func (in *Injector) Random(seed int64, p Probabilities) {
	sum := p.Fail + p.Ambiguous + p.DelayBefore + p.DelayAfter
	if p.Fail < 0 || p.Ambiguous < 0 || p.DelayBefore < 0 || p.DelayAfter < 0 || sum > 1 {
		panic(fmt.Sprintf("etcdfault: invalid probabilities %+v", p))
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.random = &randomFaults{rng: rand.New(rand.NewPCG(uint64(seed), 0x7a51c0de)), p: p}
}

func (r *randomFaults) judge(c Call) Action {
	if c.Op != OpPut && c.Op != OpDelete && c.Op != OpTxn {
		return Action{}
	}
	x := r.rng.Float64()
	p := r.p
	switch {
	case x < p.Fail:
		return Fail(nil)
	case x < p.Fail+p.Ambiguous:
		return Ambiguous(nil)
	case x < p.Fail+p.Ambiguous+p.DelayBefore:
		return DelayBefore(p.Delay)
	case x < p.Fail+p.Ambiguous+p.DelayBefore+p.DelayAfter:
		return DelayAfter(p.Delay)
	}
	return Action{}
}

package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// chaosEnv names the variable that turns etcd fault injection on in a
// binary built with the chaos tag (see faults_chaos.go).
const chaosEnv = "TASKD_CHAOS_FAULTS"

// chaosFaults is a parsed TASKD_CHAOS_FAULTS: the seed and, per Put, Delete
// and Txn call, the chance of each fault.
type chaosFaults struct {
	seed      int64
	fail      float64       // the call fails without reaching etcd
	ambiguous float64       // the call is applied, the caller gets an error
	delay     float64       // the call is delayed by delayFor
	delayFor  time.Duration // how long a delayed call waits
}

// parseChaosFaults reads "seed=N,fail=P,ambiguous=P,delay=P:DURATION".
// Every part is optional (absent: 0), but each may appear once; chances are
// between 0 and 1 and sum to at most 1; a delay with a chance above 0 needs
// a duration.
func parseChaosFaults(s string) (chaosFaults, error) {
	var f chaosFaults
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return f, fmt.Errorf("%s: %q is not key=value", chaosEnv, part)
		}
		if seen[k] {
			return f, fmt.Errorf("%s: %s given twice", chaosEnv, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "seed":
			f.seed, err = strconv.ParseInt(v, 10, 64)
		case "fail":
			f.fail, err = chance(v)
		case "ambiguous":
			f.ambiguous, err = chance(v)
		case "delay":
			p, d, hasDuration := strings.Cut(v, ":")
			if f.delay, err = chance(p); err == nil && f.delay > 0 && !hasDuration {
				err = errors.New("needs a duration: delay=P:DURATION")
			}
			if err == nil && hasDuration {
				f.delayFor, err = time.ParseDuration(d)
				if err == nil && f.delayFor <= 0 {
					err = errors.New("the duration must be > 0")
				}
			}
		default:
			return f, fmt.Errorf("%s: unknown key %q (seed, fail, ambiguous, delay)", chaosEnv, k)
		}
		if err != nil {
			return f, fmt.Errorf("%s: %s=%s: %w", chaosEnv, k, v, err)
		}
	}
	if sum := f.fail + f.ambiguous + f.delay; sum > 1 {
		return f, fmt.Errorf("%s: the chances sum to %g, more than 1", chaosEnv, sum)
	}
	return f, nil
}

// chance parses a probability.
func chance(v string) (float64, error) {
	p, err := strconv.ParseFloat(v, 64)
	if err != nil || p < 0 || p > 1 {
		return 0, fmt.Errorf("%q is not a chance between 0 and 1", v)
	}
	return p, nil
}

//go:build chaos

package main

import (
	"os"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/taskd/taskd/internal/etcdfault"
)

// injectFaults wraps cli with seeded random etcd faults when
// TASKD_CHAOS_FAULTS is set (see parseChaosFaults). Half of the delayed
// calls wait before they are sent, half after they were applied.
func injectFaults(cli *clientv3.Client, log hclog.Logger) error {
	v, ok := os.LookupEnv(chaosEnv)
	if !ok {
		return nil
	}
	f, err := parseChaosFaults(v)
	if err != nil {
		return err
	}
	in := etcdfault.New()
	in.Random(f.seed, etcdfault.Probabilities{
		Fail:        f.fail,
		Ambiguous:   f.ambiguous,
		DelayBefore: f.delay / 2,
		DelayAfter:  f.delay / 2,
		Delay:       f.delayFor,
	})
	in.Wrap(cli)
	log.Warn("etcd fault injection is on", "seed", f.seed, "fail", f.fail, "ambiguous", f.ambiguous,
		"delay", f.delay, "delay_for", f.delayFor)
	return nil
}

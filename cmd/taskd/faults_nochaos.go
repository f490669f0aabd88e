//go:build !chaos

package main

import (
	"os"

	"github.com/hashicorp/go-hclog"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// injectFaults does nothing in a normal build: fault injection exists only
// in a binary built with -tags chaos. It warns if TASKD_CHAOS_FAULTS is
// set, so that nobody believes faults are injected when they are not.
func injectFaults(_ *clientv3.Client, log hclog.Logger) error {
	if v, ok := os.LookupEnv(chaosEnv); ok {
		log.Warn("etcd fault injection is not built in (build with -tags chaos); ignoring "+chaosEnv, "value", v)
	}
	return nil
}

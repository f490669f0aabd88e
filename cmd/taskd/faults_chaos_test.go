//go:build chaos

package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/taskd/taskd/internal/etcdfault"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// With TASKD_CHAOS_FAULTS set, the client's writes get the faults asked
// for: here every Put fails, and nothing reaches etcd.
func TestInjectFaultsWrapsTheClient(t *testing.T) {
	t.Setenv(chaosEnv, "seed=1,fail=1")
	e := tst.StartEtcd(t)
	cli, plain := e.Client(t), e.Client(t)
	if err := injectFaults(cli, hclog.NewNullLogger()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); !errors.Is(err, etcdfault.ErrInjected) {
		t.Fatalf("put error = %v, want the injected failure", err)
	}
	resp, err := plain.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("etcd after a failed put: %v, %v; want nothing", resp, err)
	}
	// Reads are never harmed.
	if _, err := cli.Get(ctx, "k"); err != nil {
		t.Fatalf("get: %v", err)
	}
}

func TestInjectFaultsRefusesABadSetting(t *testing.T) {
	t.Setenv(chaosEnv, "fail=2")
	e := tst.StartEtcd(t)
	if err := injectFaults(e.Client(t), hclog.NewNullLogger()); err == nil {
		t.Fatal("injectFaults accepted fail=2")
	}
}

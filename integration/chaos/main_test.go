//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/taskd/taskd/pkg/etcdembed"
)

// The suite's knobs. A run is reproducible in what it asks for (workload,
// fault schedule) from its seed; what the processes do in between depends
// on timing, which is the point.
var (
	flagSeed       = flag.Int64("chaos.seed", 0, "seed of the workload and the fault schedule (0: from the clock, printed)")
	flagDuration   = flag.Duration("chaos.duration", 45*time.Second, "how long the workload runs (at least until every fault is injected)")
	flagFaults     = flag.Int("chaos.faults", 20, "number of faults to inject")
	flagNodes      = flag.Int("chaos.nodes", 3, "number of taskd processes (3-5)")
	flagIdentities = flag.Int("chaos.identities", 300, "number of identities the workload uses")
	flagWorkers    = flag.Int("chaos.workers", 4, "concurrent workload clients")
	flagSettle     = flag.Duration("chaos.settle", 2*time.Minute, "deadline for every acknowledged task to finish once faults stop")
	flagTxnFaults  = flag.String("chaos.txnfaults", "", "TASKD_CHAOS_FAULTS for every taskd (e.g. seed=1,fail=0.01,ambiguous=0.01,delay=0.02:50ms; needs the chaos build of taskd); empty: off")
	flagKeep       = flag.Bool("chaos.keep", false, "keep the work directory (logs, etcd data) after the run")
)

// memberEnv asks the test binary to run as one etcd member; its value is
// the member's etcdembed.Config as JSON.
const memberEnv = "CHAOS_ETCD_MEMBER"

// taskdBin is the taskd binary built (with the chaos tag) by TestMain.
var taskdBin string

func TestMain(m *testing.M) {
	runMemberIfAsked()
	flag.Parse()
	dir, err := os.MkdirTemp("", "taskd-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	taskdBin = filepath.Join(dir, "taskd")
	if err := buildTaskd(taskdBin); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// runMemberIfAsked turns the test binary into an etcd member when the
// cluster started it so; it never returns in that case. SIGTERM closes the
// member cleanly; the suite mostly uses SIGKILL.
func runMemberIfAsked() {
	v := os.Getenv(memberEnv)
	if v == "" {
		return
	}
	var cfg etcdembed.Config
	if err := json.Unmarshal([]byte(v), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "etcd member: bad config:", err)
		os.Exit(3)
	}
	// etcd's warnings (elections, slow applies, lost peers) go to the
	// member's log file, to explain a slow settle.
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(zap.WarnLevel)
	zc.OutputPaths, zc.ErrorOutputPaths = []string{"stderr"}, []string{"stderr"}
	if logger, err := zc.Build(); err == nil {
		cfg.Logger = logger
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	srv, err := etcdembed.Start(ctx, cfg)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd member:", err)
		os.Exit(3)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	srv.Close()
	os.Exit(0)
}

// buildTaskd builds ./cmd/taskd with the chaos tag (which adds the etcd
// fault layer that -chaos.txnfaults turns on) into out.
func buildTaskd(out string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-tags", "chaos", "-o", out, "./cmd/taskd")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -tags chaos ./cmd/taskd: %v\n%s", err, b)
	}
	return nil
}

// moduleRoot walks up from the working directory to the one holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// Paths of the binaries built by TestMain.
var (
	taskdBin   string
	taskctlBin string
	workerBin  string // ./integration/testworker: a remote worker
)

func TestMain(m *testing.M) {
	// A test binary started by taskservicetest.StartEtcdProcess is an etcd
	// server, not a test run.
	taskservicetest.RunEtcdChildIfAsked()
	dir, err := buildBinaries()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration: %v\n", err)
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// buildBinaries builds ./cmd/taskd, ./cmd/taskctl and the test worker into a new temporary
// directory, which it returns.
func buildBinaries() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "taskd-integration-")
	if err != nil {
		return "", err
	}
	taskdBin = filepath.Join(dir, "taskd")
	taskctlBin = filepath.Join(dir, "taskctl")
	workerBin = filepath.Join(dir, "testworker")
	for _, b := range []struct{ out, pkg string }{
		{taskdBin, "./cmd/taskd"},
		{taskctlBin, "./cmd/taskctl"},
		{workerBin, "./integration/testworker"},
	} {
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return dir, fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return dir, nil
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

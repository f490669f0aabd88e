package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// TestDataDirInUse starts a second taskd on the data directory of a running
// one: it must exit non-zero at once saying the directory is in use, and the
// first must keep serving.
func TestDataDirInUse(t *testing.T) {
	t.Parallel()
	opts := nodeOptions{name: "owner-node", dataDir: filepath.Join(t.TempDir(), "data")}
	first := startNode(t, opts)

	if log := launchRefused(t, opts, "the second taskd on the same --data-dir"); !strings.Contains(log, "data directory is in use") || !strings.Contains(log, opts.dataDir) {
		t.Errorf("second taskd's output does not say that %s is in use:\n%s", opts.dataDir, log)
	}

	if first.exited() {
		t.Fatalf("first taskd exited with code %d", first.exitCode())
	}
	ctx, cancel := rpcCtx()
	defer cancel()
	n, err := first.self(ctx)
	if err != nil || n.GetState() != taskdv1.NodeState_NODE_STATE_RUNNING {
		t.Errorf("first taskd after the second failed: node %v, error %v; want RUNNING", n, err)
	}
}

// TestBadConfigurationStopsStartUp checks that an unknown, removed or invalid
// option stops start-up with exit code 2 and an error naming it (contract §9).
func TestBadConfigurationStopsStartUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		extra func(dir string) []string
		env   []string
		want  func(dir string) []string
	}{
		{
			name:  "unknown flag",
			extra: func(string) []string { return []string{"--bogus", "1"} },
			want:  func(string) []string { return []string{"bogus"} },
		},
		{
			name:  "removed option",
			extra: func(string) []string { return []string{"--cluster-lock=true"} },
			want:  func(string) []string { return []string{"cluster-lock", "removed"} },
		},
		{
			name: "unknown environment variable",
			env:  []string{"TASKD_FOO=1"},
			want: func(string) []string { return []string{"TASKD_FOO"} },
		},
		{
			name:  "invalid value",
			extra: func(string) []string { return []string{"--lease-ttl", "abc"} },
			want:  func(string) []string { return []string{"lease-ttl", "abc"} },
		},
		{
			name: "unknown key in config file",
			extra: func(dir string) []string {
				path := filepath.Join(dir, "taskd.conf")
				if err := os.WriteFile(path, []byte("# taskd\nworkers = 4\nno-such-key = 1\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				return []string{"--config", path}
			},
			want: func(dir string) []string {
				return []string{filepath.Join(dir, "taskd.conf"), "line 3", "no-such-key"}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			opts := nodeOptions{name: "bad-config", dataDir: filepath.Join(dir, "data"), env: tc.env}
			if tc.extra != nil {
				opts.extra = tc.extra(dir)
			}
			p := launch(t, opts)
			code, ok := p.waitExit(waitExitTimeout)
			if !ok {
				t.Fatalf("taskd still running after %s", waitExitTimeout)
			}
			log := p.log.String()
			if code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			for _, w := range tc.want(dir) {
				if !strings.Contains(log, w) {
					t.Errorf("output does not mention %q:\n%s", w, log)
				}
			}
			if strings.Contains(log, "running") {
				t.Errorf("taskd got as far as running:\n%s", log)
			}
			if _, err := os.Stat(opts.dataDir); err == nil {
				t.Errorf("taskd created its data directory despite the bad configuration")
			}
		})
	}
}

// TestSIGTERMStopsCleanly stops a node with SIGTERM: it exits 0, logs that
// it stopped, and starts again on the same data directory.
func TestSIGTERMStopsCleanly(t *testing.T) {
	t.Parallel()
	opts := nodeOptions{name: "term-node", dataDir: filepath.Join(t.TempDir(), "data"), extra: []string{"--exec", "noop=true"}}
	first := startNode(t, opts)
	task := schedule(t, first.Client(), &taskdv1.TaskSpec{Identity: "grace", Kind: "noop", Triggers: every(time.Hour)})

	if code := first.Term(); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
	if !first.log.Contains("node stopped") {
		t.Errorf("log does not say the node stopped:\n%s", first.log.String())
	}

	second := startNode(t, opts)
	got, err := getTask(second.Client(), "grace", task.GetId())
	if err != nil || got.GetState() != taskdv1.TaskState_TASK_STATE_SCHEDULED {
		t.Errorf("task after the restart: %v, %v; want it SCHEDULED", got, err)
	}
}

// The default --data-dir is relative (./taskd-data): the quick start's
// `make run` depends on it, twice in a row (a restart on the same dir).
func TestDefaultRelativeDataDir(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	for i := range 2 {
		p := startNode(t, nodeOptions{name: "rel", workDir: work})
		if _, err := os.Stat(filepath.Join(work, "taskd-data", "etcd")); err != nil {
			t.Fatalf("start %d: no etcd data in the working directory's ./taskd-data: %v", i+1, err)
		}
		if code := p.Term(); code != 0 {
			t.Fatalf("start %d: exit code %d after SIGTERM", i+1, code)
		}
	}
}

package integration

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskd/taskd/pkg/taskservice/taskservicetest"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file holds what the multi-node process tests share: one etcd in a
// child process per test (so that killing any taskd never kills etcd), the
// fast relocation settings, and the recording handler with its parser.

// fastRelocation are the settings of the nodes in multi-node tests.
var fastRelocation = []string{
	"--handoff-start", "0",
	"--handoff-period", "50ms",
	"--vote-delay", "50ms",
	"--remove-delay", "50ms",
	"--drain-timeout", "5s",
}

// drainTimeout is the --drain-timeout in fastRelocation.
const drainTimeout = 5 * time.Second

// cluster is the shared part of one test's nodes: an etcd process, a key
// prefix and the file every node's "rec" handler appends to.
type cluster struct {
	t      *testing.T
	dir    string
	etcd   *taskservicetest.EtcdProcess
	prefix string
	rec    string
}

// newCluster starts an etcd process of the test's own.
func newCluster(t *testing.T, prefix string) *cluster {
	t.Helper()
	dir := t.TempDir()
	// Port 0: the etcd process binds a free port itself and reports it.
	etcd := taskservicetest.StartEtcdProcess(t, filepath.Join(dir, "etcd"), "http://127.0.0.1:0")
	return &cluster{t: t, dir: dir, etcd: etcd, prefix: prefix, rec: filepath.Join(dir, "runs.log")}
}

// opts are the options of the node called name: the cluster's etcd and
// prefix, its own data dir, the fast settings and the "rec" handler, which
// appends "node identity task run fence attempt unix-nanos" to the
// cluster's file for every run; "slowrec" does the same, then takes 200 ms
// more, so that a node stopped or killed at any moment likely has runs in
// flight. extra are more flags, after those.
func (c *cluster) opts(name string, extra ...string) nodeOptions {
	rec := fmt.Sprintf(`echo "$TASKD_NODE $TASKD_IDENTITY $TASKD_TASK_ID $TASKD_RUN $TASKD_FENCE $TASKD_ATTEMPT $(date +%%s%%N)" >> %s`,
		shellQuote(c.rec))
	flags := []string{"--prefix", c.prefix, "--exec", "rec=" + rec, "--exec", "slowrec=" + rec + "; sleep 0.2"}
	return nodeOptions{
		name:    name,
		dataDir: filepath.Join(c.dir, "data-"+name),
		etcd:    c.etcd.URL,
		extra:   append(append(flags, fastRelocation...), extra...),
	}
}

// fence is a run's fence token: the identity's epoch and the task's
// revision.
type fence struct{ epoch, rev int64 }

func parseFence(s string) (fence, bool) {
	e, r, ok := strings.Cut(s, ".")
	if !ok {
		return fence{}, false
	}
	ei, err1 := strconv.ParseInt(e, 10, 64)
	ri, err2 := strconv.ParseInt(r, 10, 64)
	return fence{ei, ri}, err1 == nil && err2 == nil
}

func (f fence) less(o fence) bool {
	if f.epoch != o.epoch {
		return f.epoch < o.epoch
	}
	return f.rev < o.rev
}

func (f fence) String() string { return fmt.Sprintf("%d.%d", f.epoch, f.rev) }

// recLine is one run as the "rec" handler recorded it.
type recLine struct {
	node, identity, task string
	run                  int64
	fence                fence
	attempt              int
	at                   time.Time // when the handler ran
}

func (l recLine) String() string {
	return fmt.Sprintf("%s %s %s run=%d fence=%s attempt=%d at=%s", l.node, l.identity, l.task, l.run, l.fence,
		l.attempt, l.at.Format("15:04:05.000"))
}

// recLines reads the cluster's recording file. A line being written while
// it is read may be cut; lines that do not parse are skipped.
func (c *cluster) recLines() []recLine {
	var out []recLine
	for _, l := range fileLines(c.t, c.rec) {
		f := strings.Fields(l)
		if len(f) != 7 {
			continue
		}
		run, err1 := strconv.ParseInt(f[3], 10, 64)
		fe, ok := parseFence(f[4])
		att, err2 := strconv.Atoi(f[5])
		ns, err3 := strconv.ParseInt(f[6], 10, 64)
		if err1 != nil || !ok || err2 != nil || err3 != nil {
			continue
		}
		out = append(out, recLine{node: f[0], identity: f[1], task: f[2], run: run, fence: fe, attempt: att,
			at: time.Unix(0, ns)})
	}
	return out
}

// byTask groups lines by task id.
func byTask(lines []recLine) map[string][]recLine {
	out := map[string][]recLine{}
	for _, l := range lines {
		out[l.task] = append(out[l.task], l)
	}
	return out
}

// getIdentity reads an identity's mapping.
func getIdentity(c taskdv1.TaskServiceClient, id string) (*taskdv1.Identity, error) {
	ctx, cancel := rpcCtx()
	defer cancel()
	resp, err := c.GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: id})
	return resp.GetIdentity(), err
}

// listNodes reads the registered nodes.
func listNodes(c taskdv1.TaskServiceClient) ([]*taskdv1.Node, error) {
	ctx, cancel := rpcCtx()
	defer cancel()
	resp, err := c.ListNodes(ctx, &taskdv1.ListNodesRequest{})
	return resp.GetNodes(), err
}

// findNode returns the listed node called name, or nil.
func findNode(nodes []*taskdv1.Node, name string) *taskdv1.Node {
	for _, n := range nodes {
		if n.GetName() == name {
			return n
		}
	}
	return nil
}

// owners returns the node each identity is mapped to ("" when unmapped).
func owners(c taskdv1.TaskServiceClient, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		got, err := getIdentity(c, id)
		if err != nil {
			return nil, fmt.Errorf("GetIdentity(%s): %w", id, err)
		}
		if got.GetMapped() {
			out[id] = got.GetNode()
		} else {
			out[id] = ""
		}
	}
	return out, nil
}

// periodicEach schedules through c one periodic task of kind, every
// interval, for each of n identities named prefix-00, prefix-01, ... It
// returns the identities, in order, and their tasks (identity → task id).
func periodicEach(t *testing.T, c taskdv1.TaskServiceClient, prefix string, n int, kind string, interval time.Duration) (ids []string, tasks map[string]string) {
	t.Helper()
	tasks = map[string]string{}
	for i := range n {
		id := fmt.Sprintf("%s-%02d", prefix, i)
		ids = append(ids, id)
		tasks[id] = schedule(t, c, &taskdv1.TaskSpec{Identity: id, Kind: kind, Triggers: every(interval)}).GetId()
	}
	return ids, tasks
}

// requireOwner fails the test unless every identity is mapped to node.
func requireOwner(t *testing.T, c taskdv1.TaskServiceClient, ids []string, node string) {
	t.Helper()
	got, err := owners(c, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if got[id] != node {
			t.Fatalf("identity %s is mapped to %q, want %q", id, got[id], node)
		}
	}
}

// successes counts the SUCCESS entries of a run history.
func successes(runs []*taskdv1.Run) int {
	k := 0
	for _, r := range runs {
		if r.GetOutcome() == taskdv1.Outcome_OUTCOME_SUCCESS {
			k++
		}
	}
	return k
}

// checkRepeats checks the recorded executions of one task: a run number
// executed more than once must carry a different, newer fence each time (a
// recovery after a crash or move), every execution but the last must come
// from one of the nodes in mayRepeat (the ones that crashed or lost their
// identities), and the history must not show an earlier execution as
// committed: its entry is INTERRUPTED or DROPPED, or has fallen out of the
// history. It returns how many run numbers were executed more than once.
func checkRepeats(t *testing.T, task string, lines []recLine, runs []*taskdv1.Run, mayRepeat ...string) int {
	t.Helper()
	repeated := 0
	byRun := map[int64][]recLine{}
	for _, l := range lines {
		byRun[l.run] = append(byRun[l.run], l)
	}
	for n, ls := range byRun {
		if len(ls) < 2 {
			continue
		}
		repeated++
		sort.Slice(ls, func(i, j int) bool { return ls[i].fence.less(ls[j].fence) })
		for i := 1; i < len(ls); i++ {
			if !ls[i-1].fence.less(ls[i].fence) {
				t.Errorf("task %s: run %d executed twice with the same fence %s:\n  %s\n  %s%s",
					task, n, ls[i].fence, ls[i-1], ls[i], describeRuns(runs))
			}
		}
		for _, l := range ls[:len(ls)-1] {
			if !slices.Contains(mayRepeat, l.node) {
				t.Errorf("task %s: run %d executed again after an execution on %s, which neither crashed nor lost the identity: %s%s",
					task, n, l.node, l, describeRuns(runs))
			}
			for _, r := range runs {
				if r.GetRunNumber() == n && r.GetFence() == l.fence.String() &&
					r.GetOutcome() != taskdv1.Outcome_OUTCOME_INTERRUPTED && r.GetOutcome() != taskdv1.Outcome_OUTCOME_DROPPED {
					t.Errorf("task %s: run %d was executed again, but its earlier execution (fence %s on %s) is committed as %s%s",
						task, n, l.fence, l.node, r.GetOutcome(), describeRuns(runs))
				}
			}
		}
	}
	perRun := map[int64]int{}
	for _, r := range runs {
		if r.GetOutcome() == taskdv1.Outcome_OUTCOME_SUCCESS {
			perRun[r.GetRunNumber()]++
		}
	}
	for n, k := range perRun {
		if k > 1 {
			t.Errorf("task %s: run %d committed SUCCESS %d times%s", task, n, k, describeRuns(runs))
		}
	}
	return repeated
}

// percentile returns the p-th percentile (0-100) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

// waitIdentitiesRan waits until the recording file shows runs of at least
// n distinct identities on node.
func (c *cluster) waitIdentitiesRan(t testing.TB, node string, n int, what string) {
	t.Helper()
	eventually(t, waitLong, what, func() error {
		ran := map[string]bool{}
		for _, l := range c.recLines() {
			if l.node == node {
				ran[l.identity] = true
			}
		}
		if len(ran) < n {
			return fmt.Errorf("%d of %d identities ran on %s", len(ran), n, node)
		}
		return nil
	})
}

//go:build compose

package compose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

const (
	project    = "taskdtest"
	network    = project + "_taskd"
	identities = 60
	perID      = 5                // tasks per identity: 300 in all
	interval   = 6 * time.Second  // of every periodic task
	periods    = 15               // runs of every periodic task
	leaseTTL   = 10 * time.Second // the compose nodes' --lease-ttl (the default)
	rpcTimeout = 5 * time.Second
)

// apiAddr is where the host reaches each node's gRPC API (the compose
// file's published ports).
var apiAddr = map[string]string{
	"taskd-1": "127.0.0.1:7420",
	"taskd-2": "127.0.0.1:7430",
	"taskd-3": "127.0.0.1:7440",
}

var nodeNames = []string{"taskd-1", "taskd-2", "taskd-3"}

// cluster is the compose project under test.
type cluster struct {
	t       *testing.T
	root    string   // module root
	argv    []string // the compose command with project and file
	clients map[string]taskdv1.TaskServiceClient
	conns   []*grpc.ClientConn
}

func TestCompose(t *testing.T) {
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers (docker info: %v: %s): the compose test needs one", err, strings.TrimSpace(string(out)))
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	c := newCluster(t)

	c.step("make image cluster-certs", func() error { return c.cmd(ctx, nil, "make", "-C", c.root, "image", "cluster-certs") })
	_ = c.compose(ctx, "down", "-v") // leftovers of an interrupted run, if any
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range append([]string{"handler"}, nodeNames...) {
				out, _ := exec.Command(c.argv[0], append(slices.Clone(c.argv[1:]), "logs", "--no-color", "--tail", "40", s)...).CombinedOutput()
				t.Logf("logs of %s:\n%s", s, out)
			}
		}
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.compose(dctx, "down", "-v", "-t", "5"); err != nil {
			t.Errorf("compose down: %v", err)
		}
	})
	upAt := time.Now()
	c.step("compose up", func() error { return c.compose(ctx, "up", "-d") })
	c.waitRunning(ctx, nodeNames...)
	t.Logf("FIGURE cluster up: %s from `up -d` to 3 RUNNING nodes", time.Since(upAt).Round(100*time.Millisecond))

	ids := c.schedule(ctx)
	c.spread(ctx)
	owners := c.owners(ctx, "taskd-1")
	t.Logf("identities per node before the faults: %v", countOwners(owners))
	c.prometheusScrapes(ctx)
	c.consolePages(ctx)

	// docker kill: the node's identities go to the others once its lease
	// expires; a start under the same name frees its previous incarnation.
	victim := "taskd-3"
	c.wantOwner(owners, victim)
	c.docker(ctx, "kill", c.container(ctx, victim))
	failover := c.waitMoved(ctx, "taskd-1", victim, owners)
	t.Logf("FIGURE failover after docker kill %s: %s for its %d identities to be owned by others (lease TTL %s)",
		victim, failover.Round(100*time.Millisecond), countOwners(owners)[victim], leaseTTL)
	c.docker(ctx, "start", c.container(ctx, victim))
	c.waitRunning(ctx, victim)
	// It came back with none of its identities (the others hold them):
	// rebalancing gives it its share again.
	share := c.waitShare(ctx, victim)
	t.Logf("FIGURE rebalancing after docker start %s: %s until it owned its share again (%v; --rebalance-interval 10s)",
		victim, share.Round(100*time.Millisecond), countOwners(c.owners(ctx, "taskd-1")))

	// docker kill then start at once, within the lease: the new process
	// finds its previous incarnation dead at its advertised address and
	// frees what it held at once.
	c.docker(ctx, "kill", c.container(ctx, "taskd-1"))
	c.docker(ctx, "start", c.container(ctx, "taskd-1"))
	c.waitRunning(ctx, "taskd-1")
	c.wantLog(ctx, "taskd-1", "freed previous incarnation")

	// docker network disconnect: the node self-fences, its identities move;
	// reconnected, it rejoins.
	owners = c.owners(ctx, "taskd-1")
	parted := "taskd-2"
	c.wantOwner(owners, parted)
	partedAt := time.Now()
	c.docker(ctx, "network", "disconnect", network, c.container(ctx, parted))
	moved := c.waitMoved(ctx, "taskd-1", parted, owners)
	t.Logf("FIGURE partition of %s: its %d identities owned by others after %s",
		parted, countOwners(owners)[parted], moved.Round(100*time.Millisecond))
	c.docker(ctx, "network", "connect", "--alias", parted, network, c.container(ctx, parted))
	healedAt := time.Now()
	c.waitRunning(ctx, parted)
	if fenced, ok := c.logTime(ctx, parted, "health: not serving", partedAt); ok {
		t.Logf("FIGURE partition of %s: it stopped serving (self-fenced) %s after the disconnect",
			parted, fenced.Sub(partedAt).Round(100*time.Millisecond))
	} else {
		t.Fatalf("%s never logged that it stopped serving while partitioned", parted)
	}

	// One etcd member stopped: the service goes on (a run commits).
	c.step("stop etcd-1", func() error { return c.compose(ctx, "stop", "-t", "5", "etcd-1") })
	c.oneShot(ctx, "taskd-2", "etcd-member-down")
	c.step("start etcd-1", func() error { return c.compose(ctx, "start", "etcd-1") })

	// docker restart: drains, restarts under the same name.
	c.restart(ctx, "taskd-1")

	// Rolling restart of all three: each drains first.
	for _, n := range nodeNames {
		c.restart(ctx, n)
	}

	c.check(ctx, ids, parted, partedAt, healedAt)
	t.Logf("FIGURE compose test wall time %s (images included)", time.Since(began).Round(time.Second))
}

func newCluster(t *testing.T) *cluster {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(wd, "..", "..")
	file := filepath.Join(root, "deploy", "compose", "docker-compose.yml")
	composeCmd := []string{"docker-compose"}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		composeCmd = []string{"docker", "compose"}
	}
	c := &cluster{t: t, root: root, clients: map[string]taskdv1.TaskServiceClient{},
		argv: append(composeCmd, "-p", project, "-f", file)}
	for _, n := range nodeNames {
		conn, err := grpc.NewClient(apiAddr[n], grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		c.conns = append(c.conns, conn)
		c.clients[n] = taskdv1.NewTaskServiceClient(conn)
	}
	t.Cleanup(func() {
		for _, conn := range c.conns {
			conn.Close()
		}
	})
	return c
}

// step runs f and fails the test if it fails.
func (c *cluster) step(what string, f func() error) {
	c.t.Helper()
	if err := f(); err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
}

// cmd runs a command, returning its output in the error.
func (c *cluster) cmd(ctx context.Context, out *string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	b, err := cmd.CombinedOutput()
	if out != nil {
		*out = strings.TrimSpace(string(b))
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, b)
	}
	return nil
}

func (c *cluster) compose(ctx context.Context, args ...string) error {
	return c.cmd(ctx, nil, c.argv[0], append(slices.Clone(c.argv[1:]), args...)...)
}

// docker runs a docker command that must succeed.
func (c *cluster) docker(ctx context.Context, args ...string) {
	c.t.Helper()
	if err := c.cmd(ctx, nil, "docker", args...); err != nil {
		c.t.Fatal(err)
	}
}

// container is the container id of a compose service.
func (c *cluster) container(ctx context.Context, service string) string {
	c.t.Helper()
	var id string
	if err := c.cmd(ctx, &id, c.argv[0], append(slices.Clone(c.argv[1:]), "ps", "-q", service)...); err != nil || id == "" {
		c.t.Fatalf("container of %s: %q %v", service, id, err)
	}
	return id
}

// poll calls cond every 200 ms until it returns true; it fails the test
// when ctx ends first, with cond's last error.
func (c *cluster) poll(ctx context.Context, what string, cond func(ctx context.Context) (bool, error)) time.Duration {
	c.t.Helper()
	start := time.Now()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		ok, err := cond(rctx)
		cancel()
		if ok {
			return time.Since(start)
		}
		last = err
		select {
		case <-ctx.Done():
			c.t.Fatalf("%s: not after %s (last error: %v)", what, time.Since(start).Round(time.Second), last)
		case <-tick.C:
		}
	}
}

// prometheusScrapes waits until the compose file's Prometheus scrapes the
// three nodes and its sum of taskd_identities_owned over them is the number
// of identities scheduled.
// consoleHTTP is each node's --http port as the host publishes it.
var consoleHTTP = map[string]string{"taskd-1": "127.0.0.1:7421", "taskd-2": "127.0.0.1:7431", "taskd-3": "127.0.0.1:7441"}

// consolePages opens the web console of every node, as a browser on the
// host does, and wants its cluster page listing the three nodes: the
// console reaches its own node's API from inside the container (which has
// no IPv6 loopback) whatever --listen says.
func (c *cluster) consolePages(ctx context.Context) {
	c.t.Helper()
	for _, name := range nodeNames {
		c.poll(ctx, "the console of "+name+" shows the cluster", func(ctx context.Context) (bool, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+consoleHTTP[name]+"/ui/", nil)
			if err != nil {
				return false, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false, err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			if err != nil {
				return false, err
			}
			if resp.StatusCode != http.StatusOK {
				return false, fmt.Errorf("GET /ui/: %d: %.300s", resp.StatusCode, body)
			}
			for _, n := range nodeNames {
				if !strings.Contains(string(body), n) {
					return false, fmt.Errorf("the cluster page does not list %s", n)
				}
			}
			return true, nil
		})
	}
}

func (c *cluster) prometheusScrapes(ctx context.Context) {
	c.t.Helper()
	query := func(ctx context.Context, q string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			"http://127.0.0.1:9090/api/v1/query?query="+url.QueryEscape(q), nil)
		if err != nil {
			return "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var body struct {
			Status string
			Data   struct {
				Result []struct {
					Value []any
				}
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return "", err
		}
		if body.Status != "success" || len(body.Data.Result) != 1 || len(body.Data.Result[0].Value) != 2 {
			return "", fmt.Errorf("query %s: status %q, %d results", q, body.Status, len(body.Data.Result))
		}
		v, _ := body.Data.Result[0].Value[1].(string)
		return v, nil
	}
	took := c.poll(ctx, "Prometheus scrapes the three nodes", func(ctx context.Context) (bool, error) {
		up, err := query(ctx, `count(up{job="taskd"} == 1)`)
		if err != nil || up != "3" {
			return false, fmt.Errorf("nodes up: %q (%v)", up, err)
		}
		owned, err := query(ctx, `sum(taskd_identities_owned{job="taskd"})`)
		if err != nil || owned != fmt.Sprint(identities) {
			return false, fmt.Errorf("identities owned: %q, want %d (%v)", owned, identities, err)
		}
		return true, nil
	})
	c.t.Logf("Prometheus: 3 nodes up and %d identities owned in its data %s after the check began", identities, took.Round(100*time.Millisecond))
}

// waitRunning waits until every named node is RUNNING and serves its API.
func (c *cluster) waitRunning(ctx context.Context, names ...string) {
	c.t.Helper()
	c.poll(ctx, fmt.Sprintf("%v RUNNING", names), func(ctx context.Context) (bool, error) {
		for _, n := range names {
			resp, err := c.clients[n].ListNodes(ctx, &taskdv1.ListNodesRequest{})
			if err != nil {
				return false, err
			}
			running := false
			for _, node := range resp.GetNodes() {
				if node.GetName() == n && node.GetState() == taskdv1.NodeState_NODE_STATE_RUNNING {
					running = true
				}
			}
			if !running {
				return false, fmt.Errorf("%s not RUNNING in its own node list", n)
			}
		}
		return true, nil
	})
}

func identity(i int) string { return fmt.Sprintf("user-%02d", i) }

// schedule schedules identities×perID periodic tasks, each batch through
// taskd-1 or taskd-2 in turn, and returns their ids by identity.
func (c *cluster) schedule(ctx context.Context) map[string][]string {
	c.t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	var specs []*taskdv1.TaskSpec
	start := time.Now().Add(5 * time.Second)
	for i := 0; i < identities; i++ {
		for j := 0; j < perID; j++ {
			first := start.Add(time.Duration(r.Int64N(int64(interval))))
			specs = append(specs, &taskdv1.TaskSpec{
				Identity: identity(i), Kind: "demo", Scope: taskdv1.Scope_SCOPE_IDENTITY,
				Payload: []byte(fmt.Sprintf("%d.%d", i, j)),
				Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Periodic{Periodic: &taskdv1.PeriodicTrigger{
					Start: timestamppb.New(first), Interval: durationpb.New(interval), Count: periods,
				}}}},
				// Every period runs, however late a fault makes it.
				Misfire: taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL,
			})
		}
	}
	ids := map[string][]string{}
	for b := 0; b*100 < len(specs); b++ {
		via := nodeNames[b%2]
		rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		resp, err := c.clients[via].ScheduleTasks(rctx, &taskdv1.ScheduleTasksRequest{Tasks: specs[b*100 : min(len(specs), (b+1)*100)]})
		cancel()
		if err != nil {
			c.t.Fatalf("schedule batch %d through %s: %v", b, via, err)
		}
		for _, task := range resp.GetTasks() {
			ids[task.GetSpec().GetIdentity()] = append(ids[task.GetSpec().GetIdentity()], task.GetId())
		}
	}
	c.t.Logf("scheduled %d periodic tasks (%d runs each, every %s) for %d identities through taskd-1 and taskd-2",
		len(specs), periods, interval, identities)
	return ids
}

// owners maps every identity to its owner, asked through via.
func (c *cluster) owners(ctx context.Context, via string) map[string]string {
	c.t.Helper()
	out := map[string]string{}
	c.poll(ctx, "identity owners", func(ctx context.Context) (bool, error) {
		for i := 0; i < identities; i++ {
			resp, err := c.clients[via].GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: identity(i)})
			if err != nil {
				return false, err
			}
			if !resp.GetIdentity().GetMapped() {
				return false, fmt.Errorf("%s not mapped", identity(i))
			}
			out[identity(i)] = resp.GetIdentity().GetNode()
		}
		return true, nil
	})
	return out
}

// spread moves identity i to node i%3, so that each node owns some.
func (c *cluster) spread(ctx context.Context) {
	c.t.Helper()
	for i := 0; i < identities; i++ {
		to := nodeNames[i%len(nodeNames)]
		rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		_, err := c.clients["taskd-1"].MoveIdentity(rctx, &taskdv1.MoveIdentityRequest{Identity: identity(i), ToNode: to})
		cancel()
		if err != nil {
			c.t.Fatalf("move %s to %s: %v", identity(i), to, err)
		}
	}
}

// wantOwner fails unless node owns an identity, so that a fault on it
// tests something.
func (c *cluster) wantOwner(owners map[string]string, node string) {
	c.t.Helper()
	if countOwners(owners)[node] == 0 {
		c.t.Fatalf("%s owns no identity before its fault: %v", node, countOwners(owners))
	}
}

func countOwners(owners map[string]string) map[string]int {
	n := map[string]int{}
	for _, o := range owners {
		n[o]++
	}
	return n
}

// waitShare waits until node owns identities again and the three nodes'
// counts differ by at most the rebalancing tolerance (10% of the mean, at
// least one); it returns how long that took.
func (c *cluster) waitShare(ctx context.Context, node string) time.Duration {
	c.t.Helper()
	slack := max(identities*10/100/len(nodeNames), 1)
	return c.poll(ctx, node+" owns its share of the identities again", func(ctx context.Context) (bool, error) {
		counts := map[string]int{}
		for i := 0; i < identities; i++ {
			resp, err := c.clients["taskd-1"].GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: identity(i)})
			if err != nil {
				return false, err
			}
			counts[resp.GetIdentity().GetNode()]++
		}
		lo, hi := identities, 0
		for _, n := range nodeNames {
			lo, hi = min(lo, counts[n]), max(hi, counts[n])
		}
		if counts[node] == 0 || hi-lo > slack {
			return false, fmt.Errorf("identities per node %v: want each within %d of the others", counts, slack)
		}
		return true, nil
	})
}

// waitMoved waits until none of the identities owners gave to node is
// owned by it any more, asked through via; it returns how long that took.
func (c *cluster) waitMoved(ctx context.Context, via, node string, owners map[string]string) time.Duration {
	c.t.Helper()
	return c.poll(ctx, "identities of "+node+" moved", func(ctx context.Context) (bool, error) {
		for id, o := range owners {
			if o != node {
				continue
			}
			resp, err := c.clients[via].GetIdentity(ctx, &taskdv1.GetIdentityRequest{Identity: id})
			if err != nil {
				return false, err
			}
			if got := resp.GetIdentity().GetNode(); got == node || !resp.GetIdentity().GetMapped() {
				return false, fmt.Errorf("%s still on %q", id, got)
			}
		}
		return true, nil
	})
}

// wantLog fails unless the service's log contains text.
func (c *cluster) wantLog(ctx context.Context, service, text string) {
	c.t.Helper()
	var out string
	if err := c.cmd(ctx, &out, c.argv[0], append(slices.Clone(c.argv[1:]), "logs", "--no-color", service)...); err != nil {
		c.t.Fatal(err)
	}
	if !strings.Contains(out, text) {
		c.t.Fatalf("the log of %s does not contain %q", service, text)
	}
}

// logTime returns the time of the first line of the service's log after
// since that contains text (taskd's lines begin with an RFC 3339 time).
func (c *cluster) logTime(ctx context.Context, service, text string, since time.Time) (time.Time, bool) {
	c.t.Helper()
	var out string
	if err := c.cmd(ctx, &out, c.argv[0], append(slices.Clone(c.argv[1:]), "logs", "--no-color", service)...); err != nil {
		c.t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		_, rest, ok := strings.Cut(line, "| ")
		if !ok || !strings.Contains(rest, text) {
			continue
		}
		stamp, _, _ := strings.Cut(rest, " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err == nil && at.After(since) {
			return at, true
		}
	}
	return time.Time{}, false
}

// oneShot schedules a one-shot task through via and waits for its SUCCESS.
func (c *cluster) oneShot(ctx context.Context, via, name string) {
	c.t.Helper()
	rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	resp, err := c.clients[via].ScheduleTask(rctx, &taskdv1.ScheduleTaskRequest{Task: &taskdv1.TaskSpec{
		Identity: "probe-" + name, Kind: "demo", Scope: taskdv1.Scope_SCOPE_IDENTITY,
		Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}},
	}})
	cancel()
	if err != nil {
		c.t.Fatalf("%s: schedule: %v", name, err)
	}
	d := c.poll(ctx, name+": one-shot task succeeds", func(ctx context.Context) (bool, error) {
		runs, err := c.clients[via].ListRuns(ctx, &taskdv1.ListRunsRequest{Identity: "probe-" + name, TaskId: resp.GetTask().GetId()})
		if err != nil {
			return false, err
		}
		for _, r := range runs.GetRuns() {
			if r.GetOutcome() == taskdv1.Outcome_OUTCOME_SUCCESS {
				return true, nil
			}
		}
		return false, errors.New("no SUCCESS run yet")
	})
	c.t.Logf("%s: a one-shot task scheduled through %s succeeded after %s", name, via, d.Round(100*time.Millisecond))
}

// restart restarts a node with docker restart (SIGTERM: it drains) and
// waits until it is RUNNING again with a new incarnation.
func (c *cluster) restart(ctx context.Context, node string) {
	c.t.Helper()
	before := c.incarnation(ctx, node)
	start := time.Now()
	c.docker(ctx, "restart", "-t", "45", c.container(ctx, node))
	c.poll(ctx, node+" RUNNING with a new incarnation", func(ctx context.Context) (bool, error) {
		resp, err := c.clients[node].ListNodes(ctx, &taskdv1.ListNodesRequest{})
		if err != nil {
			return false, err
		}
		for _, n := range resp.GetNodes() {
			if n.GetName() == node && n.GetState() == taskdv1.NodeState_NODE_STATE_RUNNING && n.GetIncarnation() != before {
				return true, nil
			}
		}
		return false, errors.New("not RUNNING anew")
	})
	c.wantLog(ctx, node, "draining on signal")
	c.t.Logf("docker restart %s: RUNNING again after %s", node, time.Since(start).Round(100*time.Millisecond))
}

func (c *cluster) incarnation(ctx context.Context, node string) string {
	c.t.Helper()
	var inc string
	c.poll(ctx, node+" incarnation", func(ctx context.Context) (bool, error) {
		resp, err := c.clients[node].ListNodes(ctx, &taskdv1.ListNodesRequest{})
		if err != nil {
			return false, err
		}
		for _, n := range resp.GetNodes() {
			if n.GetName() == node {
				inc = n.GetIncarnation()
				return true, nil
			}
		}
		return false, errors.New("not listed")
	})
	return inc
}

// check waits until every task has completed, then reads the run histories:
// every run number 1..periods committed exactly once, with SUCCESS; no run
// started on the partitioned node between its lease's end and the heal.
func (c *cluster) check(ctx context.Context, ids map[string][]string, parted string, partedAt, healedAt time.Time) {
	c.t.Helper()
	via := "taskd-1"
	settle := c.poll(ctx, "every task COMPLETED", func(ctx context.Context) (bool, error) {
		for id, tasks := range ids {
			for _, task := range tasks {
				resp, err := c.clients[via].GetTask(ctx, &taskdv1.GetTaskRequest{Identity: id, TaskId: task})
				if err != nil {
					return false, err
				}
				if st := resp.GetTask().GetState(); st != taskdv1.TaskState_TASK_STATE_COMPLETED {
					return false, fmt.Errorf("%s/%s %s, %d runs", id, task, st, resp.GetTask().GetRunCount())
				}
			}
		}
		return true, nil
	})
	c.t.Logf("all tasks COMPLETED %s after the last fault", settle.Round(100*time.Millisecond))

	fenceEnd := partedAt.Add(leaseTTL)
	var lost, doubles, fenced, uncommitted, tasks, committed int
	for id, list := range ids {
		for _, task := range list {
			tasks++
			rctx, cancel := context.WithTimeout(ctx, rpcTimeout)
			resp, err := c.clients[via].ListRuns(rctx, &taskdv1.ListRunsRequest{Identity: id, TaskId: task})
			cancel()
			if err != nil {
				c.t.Fatalf("runs of %s/%s: %v", id, task, err)
			}
			byNumber := map[int64]int{}
			for _, r := range resp.GetRuns() {
				switch r.GetOutcome() {
				case taskdv1.Outcome_OUTCOME_SUCCESS:
					byNumber[r.GetRunNumber()]++
					committed++
				default:
					uncommitted++
				}
				if started := r.GetStartedAt().AsTime(); r.GetNode() == parted && started.After(fenceEnd) && started.Before(healedAt) {
					fenced++
					c.t.Errorf("%s/%s run %d started on partitioned %s at %s, after its lease ended (%s)",
						id, task, r.GetRunNumber(), parted, started.Format(time.StampMilli), fenceEnd.Format(time.StampMilli))
				}
			}
			for n := int64(1); n <= periods; n++ {
				switch byNumber[n] {
				case 0:
					lost++
					c.t.Errorf("%s/%s: run %d has no SUCCESS in the history", id, task, n)
				case 1:
				default:
					doubles++
					c.t.Errorf("%s/%s: run %d committed %d times", id, task, n, byNumber[n])
				}
			}
		}
	}
	c.t.Logf("FIGURE histories of %d tasks: %d SUCCESS runs, %d other entries (interrupted/dropped), lost %d, committed twice %d, started on the partitioned node after its lease %d",
		tasks, committed, uncommitted, lost, doubles, fenced)
}

package taskservice_test

import (
	"strings"
	"testing"
	"time"

	"github.com/taskd/taskd/internal/etcdfault"
	"github.com/taskd/taskd/pkg/taskservice"
	tst "github.com/taskd/taskd/pkg/taskservice/taskservicetest"
)

// A node whose lease renewals fail stops serving once it self-fences, with
// a reason naming the lease, and serves again once a renewal succeeds.
func TestHealthFollowsLeaseRenewals(t *testing.T) {
	e := tst.StartEtcd(t)
	cli := e.Client(t)
	in := etcdfault.New()
	in.Wrap(cli)
	n := tst.StartNode(t, cli, taskservice.Config{Name: "healthy", LeaseTTL: 2 * time.Second})
	if serving, reason := n.Health(); !serving || reason != "RUNNING" {
		t.Fatalf("Health() = %v %q after start, want serving RUNNING", serving, reason)
	}

	renewals := in.Add(etcdfault.Rule{Op: etcdfault.OpKeepAliveOnce, Action: etcdfault.Fail(nil)})
	var reason string
	tst.Eventually(t, 10*time.Second, func() bool {
		var serving bool
		serving, reason = n.Health()
		return !serving
	}, "the node to stop serving while its renewals fail")
	if !strings.Contains(reason, "lease") || !strings.Contains(reason, "2s") || renewals.Hits() == 0 {
		t.Fatalf("reason %q after %d failed renewals, want one naming the lease and its TTL", reason, renewals.Hits())
	}

	renewals.Remove()
	tst.Eventually(t, 10*time.Second, func() bool {
		serving, _ := n.Health()
		return serving
	}, "the node to serve again once a renewal succeeds")
}

// A node that is not started is not serving, and says in which state it is.
func TestHealthBeforeStart(t *testing.T) {
	e := tst.StartEtcd(t)
	n := tst.NewNode(t, e.Client(t), taskservice.Config{Name: "unstarted"})
	if serving, reason := n.Health(); serving || reason != "STARTING" {
		t.Fatalf("Health() = %v %q before start, want not serving, STARTING", serving, reason)
	}
}

package membership_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/taskd/taskd/internal/membership"
)

// serveIncarnation serves a gRPC health server on loopback announcing
// incarnation (as cmd/taskd does for its node) until the test ends, and
// returns its address.
func serveIncarnation(t *testing.T, incarnation string) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus(membership.IncarnationHealthService(incarnation), healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

// An earlier incarnation whose lease is live and whose address answers for
// that very incarnation holds the name: Register refuses with ErrNameInUse,
// naming it, its address and how to take its place, and leaves its record
// and lease alone.
func TestRegisterRefusesALiveIncarnation(t *testing.T) {
	cli := etcd(t)
	addr := serveIncarnation(t, "old")
	old := putRecord(t, cli, "old", addr)
	m, node := setup(t, cli, "inc1", nil)
	err := m.Register(ctxFor(t))
	if !errors.Is(err, membership.ErrNameInUse) {
		t.Fatalf("register over a live incarnation: %v, want ErrNameInUse", err)
	}
	for _, want := range []string{name, "old", addr, "Replace", "--replace"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %q", err, want)
		}
	}
	if rec, lease, _ := registration(t, cli); rec.Incarnation != "old" || lease != old || !leaseLive(t, cli, old) {
		t.Fatalf("after the refusal: registration of %s under %d (live %v), want the live incarnation's untouched",
			rec.Incarnation, lease, leaseLive(t, cli, old))
	}
	if m.Lease() != 0 || node.count("registered") != 0 {
		t.Fatalf("after the refusal the member holds lease %d, the node was told %d times; want nothing", m.Lease(), node.count("registered"))
	}
}

// With Replace, a live incarnation's name is taken over: its record is
// replaced and its lease revoked (the replaced process finds it gone).
func TestRegisterWithReplaceTakesALiveName(t *testing.T) {
	cli := etcd(t)
	old := putRecord(t, cli, "old", serveIncarnation(t, "old"))
	m, _ := setup(t, cli, "inc1", func(c *membership.Config) { c.Replace = true })
	register(t, m)
	if rec, lease, _ := registration(t, cli); rec.Incarnation != "inc1" || lease != m.Lease() {
		t.Fatalf("registration of %s under %d, want inc1's under %d", rec.Incarnation, lease, m.Lease())
	}
	if leaseLive(t, cli, old) {
		t.Fatal("the replaced incarnation's lease is still live")
	}
}

// An earlier incarnation whose lease is live but that does not answer for
// itself (its address serves another incarnation, or nothing) is stale:
// it is replaced at once.
func TestRegisterReplacesAnIncarnationThatDoesNotAnswer(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	for _, c := range []struct{ what, addr string }{
		{"another incarnation at its address", serveIncarnation(t, "someone-else")},
		{"nothing at its address", closedAddr},
	} {
		t.Run(c.what, func(t *testing.T) {
			cli := etcd(t)
			old := putRecord(t, cli, "old", c.addr)
			m, _ := setup(t, cli, "inc1", nil)
			register(t, m)
			if rec, _, _ := registration(t, cli); rec.Incarnation != "inc1" {
				t.Fatalf("registration of %s, want inc1's", rec.Incarnation)
			}
			if leaseLive(t, cli, old) {
				t.Fatal("the stale incarnation's lease is still live")
			}
		})
	}
}

// The health service name carries the incarnation, so that a probe asks
// for that very process.
func TestIncarnationHealthServiceNamesTheIncarnation(t *testing.T) {
	if a, b := membership.IncarnationHealthService("a"), membership.IncarnationHealthService("b"); a == b || !strings.HasSuffix(a, "a") {
		t.Fatalf("health services %q and %q, want one per incarnation", a, b)
	}
}

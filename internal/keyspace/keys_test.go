package keyspace_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/pkg/pending"
)

const tid = "01h00000000000000000000000"

func TestKeysLayout(t *testing.T) {
	k := keyspace.New("/taskd/")
	tests := []struct{ name, got, want string }{
		{"Task", k.Task("bob", tid), "/taskd/task/bob/" + tid},
		{"Task escaped", k.Task("bob/x", tid), "/taskd/task/bob%2Fx/" + tid},
		{"Task unicode", k.Task("José", tid), "/taskd/task/Jos%C3%A9/" + tid},
		{"Tasks", k.Tasks("bob"), "/taskd/task/bob/"},
		{"Tasks escaped", k.Tasks("a b"), "/taskd/task/a%20b/"},
		{"AllTasks", k.AllTasks(), "/taskd/task/"},
		{"Runs", k.Runs("bob", tid), "/taskd/runs/bob/" + tid + "/"},
		{"Runs escaped", k.Runs("bob%", tid), "/taskd/runs/bob%25/" + tid + "/"},
		{"Run 0", k.Run("bob", tid, 0), "/taskd/runs/bob/" + tid + "/0000000000000000"},
		{"Run 1", k.Run("bob", tid, 1), "/taskd/runs/bob/" + tid + "/0000000000000001"},
		{"Run 255", k.Run("bob", tid, 255), "/taskd/runs/bob/" + tid + "/00000000000000ff"},
		{"Run max", k.Run("bob", tid, math.MaxInt64), "/taskd/runs/bob/" + tid + "/7fffffffffffffff"},
		{"Idem", k.Idem("bob", "req-1"), "/taskd/idem/bob/req-1"},
		{"Idem escaped key", k.Idem("bob", "a/b c"), "/taskd/idem/bob/a%2Fb%20c"},
		{"Idem escaped identity", k.Idem("bob/x", "k"), "/taskd/idem/bob%2Fx/k"},
		{"IdemPrefix", k.IdemPrefix("bob"), "/taskd/idem/bob/"},
		{"other prefix", keyspace.New("/c2/").Task("bob", tid), "/c2/task/bob/" + tid},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// TestKeysPrefixes: each key is under its own identity's and task's
// prefixes and under no other identity's (no "bob" vs "bob.x" collision).
func TestKeysPrefixes(t *testing.T) {
	k := keyspace.New("/taskd/")
	ids := []string{"bob", "bob.x", "bob/x", "bob%2Fx", "bo", "bob ", "bob/", "b"}
	for _, a := range ids {
		for _, b := range ids {
			same := a == b
			checks := []struct {
				what, key, prefix string
			}{
				{"Task/Tasks", k.Task(b, tid), k.Tasks(a)},
				{"Run/Runs", k.Run(b, tid, 3), k.Runs(a, tid)},
				{"Idem/IdemPrefix", k.Idem(b, "key"), k.IdemPrefix(a)},
			}
			for _, c := range checks {
				if strings.HasPrefix(c.key, c.prefix) != same {
					t.Errorf("%s: key %q under prefix %q: %v", c.what, c.key, c.prefix, !same)
				}
			}
		}
		if !strings.HasPrefix(k.Task(a, tid), k.AllTasks()) {
			t.Errorf("Task(%q) not under AllTasks", a)
		}
	}
	// A task's runs are not under another task's runs, even when one task
	// id is a prefix of the other.
	if strings.HasPrefix(k.Run("bob", tid+"1", 1), k.Runs("bob", tid)) {
		t.Error("runs of one task fall under another task's prefix")
	}
	if strings.HasPrefix(k.Task("bob", tid), k.Runs("bob", tid)) || strings.HasPrefix(k.Run("bob", tid, 1), k.AllTasks()) {
		t.Error("task and run keyspaces overlap")
	}
}

func TestSplitTaskRoundTrip(t *testing.T) {
	src := pending.NewIDSource()
	for _, prefix := range []string{"/taskd/", "/", "x/y/"} {
		k := keyspace.New(prefix)
		for _, id := range []string{
			"bob", "bob/x", "/", "//", "bob/x/y", "bob%2Fx", "%", "a b", ".", "..", "José", "山田/太郎", "🦀",
			"task/bob", strings.Repeat("/", 256), strings.Repeat("é", 128),
		} {
			taskID := src.New()
			gotID, gotTask, err := k.SplitTask(k.Task(id, taskID))
			if err != nil || gotID != id || gotTask != taskID {
				t.Errorf("prefix %q: SplitTask(Task(%q, %q)) = %q, %q, %v", prefix, id, taskID, gotID, gotTask, err)
			}
		}
	}
}

func TestSplitTaskErrors(t *testing.T) {
	k := keyspace.New("/taskd/")
	for _, key := range []string{
		"",
		"/taskd/",
		"/taskd/task/",
		"/taskd/task/bob",          // no task id
		"/taskd/task/bob/",         // empty task id (the Tasks prefix)
		"/taskd/task//" + tid,      // empty identity
		"/taskd/task/bob/x/" + tid, // an extra segment
		"/taskd/task/bob%2/" + tid, // truncated escape
		"/taskd/task/bob%ZZ/" + tid,
		"/taskd/runs/bob/" + tid + "/0000000000000001",
		"/taskd/idem/bob/key",
		"/other/task/bob/" + tid,
		"taskd/task/bob/" + tid,
	} {
		if id, taskID, err := k.SplitTask(key); err == nil {
			t.Errorf("SplitTask(%q) = %q, %q, nil; want an error", key, id, taskID)
		}
	}
}

// TestRunKeysSortBySeq: etcd sorts keys by bytes; run keys must come out in
// seq order.
func TestRunKeysSortBySeq(t *testing.T) {
	k := keyspace.New("/taskd/")
	seqs := []int64{0, 1, 2, 9, 10, 15, 16, 99, 100, 255, 256, 4095, 4096, 1 << 32, 1<<32 + 1, 1 << 62, math.MaxInt64}
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		seqs = append(seqs, r.Int64N(1<<40))
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	keys := make([]string, len(seqs))
	for i, s := range seqs {
		keys[i] = k.Run("bob", tid, s)
		if len(keys[i]) != len(k.Runs("bob", tid))+16 {
			t.Fatalf("Run key %q is not fixed width", keys[i])
		}
	}
	shuffled := slices.Clone(keys)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	slices.Sort(shuffled)
	if !slices.Equal(shuffled, keys) {
		t.Fatal("run keys do not sort by seq")
	}
}

func BenchmarkTaskKey(b *testing.B) {
	k := keyspace.New("/taskd/")
	for _, bc := range []struct{ name, id string }{
		{"plain", "user-1234@example.com"},
		{"escaped", "tenant/42/user 7"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_ = k.Task(bc.id, tid)
			}
		})
	}
}

func TestPauseKeysRoundTrip(t *testing.T) {
	k := keyspace.New("/taskd/")
	for _, name := range []string{"a", "user/1", "kind.with.dots", "%2F", "x y"} {
		id, kind, err := k.SplitPause(k.PauseIdentity(name))
		if err != nil || id != name || kind != "" {
			t.Fatalf("SplitPause(PauseIdentity(%q)) = %q, %q, %v", name, id, kind, err)
		}
		id, kind, err = k.SplitPause(k.PauseKind(name))
		if err != nil || kind != name || id != "" {
			t.Fatalf("SplitPause(PauseKind(%q)) = %q, %q, %v", name, id, kind, err)
		}
	}
	for _, bad := range []string{"/taskd/pause/", "/taskd/pause/other/x", "/taskd/task/x", "/taskd/pause/identity/%zz"} {
		if _, _, err := k.SplitPause(bad); err == nil {
			t.Fatalf("SplitPause(%q) accepted", bad)
		}
	}
}

func TestEntryLayout(t *testing.T) {
	k := keyspace.New("/taskd/")
	if got := k.Entry("n1", "bob/x", "*"); got != "/taskd/handoff/n1/bob%2Fx/*" {
		t.Errorf("entry key %q", got)
	}
	if !strings.HasPrefix(k.Entry("n1", "a", "t"), k.Area("n1")) || strings.HasPrefix(k.Entry("n10", "a", "t"), k.Area("n1")) {
		t.Error("a node's area must hold its entries and only its entries")
	}
}

// TestLayoutOfEveryKey pins every key and prefix to its row of
// docs/architecture.md's Keyspace table.
func TestLayoutOfEveryKey(t *testing.T) {
	k := keyspace.New("/taskd/")
	tests := []struct{ name, got, want string }{
		{"Node", k.Node("n1"), "/taskd/nodes/n1"},
		{"Nodes", k.Nodes(), "/taskd/nodes/"},
		{"Leader", k.Leader(), "/taskd/leader"},
		{"Controls", k.Controls(), "/taskd/control/"},
		{"Control", k.Control("n1"), "/taskd/control/n1/"},
		{"DrainRequest", k.DrainRequest("n1"), "/taskd/control/n1/drain"},
		{"RebalanceRequest", k.RebalanceRequest("n1"), "/taskd/control/n1/rebalance"},
		{"Mapping", k.Mapping("bob/x"), "/taskd/map/bob%2Fx"},
		{"Mappings", k.Mappings(), "/taskd/map/"},
		{"Status", k.Status("bob/x"), "/taskd/status/bob%2Fx"},
		{"Owned", k.Owned("n1", "bob/x"), "/taskd/owned/n1/bob%2Fx"},
		{"OwnedPrefix", k.OwnedPrefix("n1"), "/taskd/owned/n1/"},
		{"AllOwned", k.AllOwned(), "/taskd/owned/"},
		{"Handoffs", k.Handoffs(), "/taskd/handoff/"},
		{"Area", k.Area("n1"), "/taskd/handoff/n1/"},
		{"Entries", k.Entries("n1", "bob/x"), "/taskd/handoff/n1/bob%2Fx/"},
		{"Entry", k.Entry("n1", "bob/x", tid), "/taskd/handoff/n1/bob%2Fx/" + tid},
		{"Result", k.Result("bob/x", tid), "/taskd/result/bob%2Fx/" + tid},
		{"Every", k.Every("bob/x", tid), "/taskd/every/bob%2Fx/" + tid},
		{"EveryTasks", k.EveryTasks("bob/x"), "/taskd/every/bob%2Fx/"},
		{"AllEvery", k.AllEvery(), "/taskd/every/"},
		{"EveryProgress", k.EveryProgress("n1", tid), "/taskd/everynode/n1/" + tid},
		{"EveryProgressOf", k.EveryProgressOf("n1"), "/taskd/everynode/n1/"},
		{"AllEveryProgress", k.AllEveryProgress(), "/taskd/everynode/"},
		{"EveryRuns", k.EveryRuns(tid), "/taskd/everyruns/" + tid + "/"},
		{"EveryRun", k.EveryRun(tid, "n1", 255), "/taskd/everyruns/" + tid + "/n1/00000000000000ff"},
		{"Pauses", k.Pauses(), "/taskd/pause/"},
		{"PauseIdentity", k.PauseIdentity("bob/x"), "/taskd/pause/identity/bob%2Fx"},
		{"PauseKind", k.PauseKind("mail out"), "/taskd/pause/kind/mail%20out"},
		{"Tokens", k.Tokens(), "/taskd/token/"},
		{"Token", k.Token("ops_1"), "/taskd/token/ops_1"},
		{"Calendars", k.Calendars(), "/taskd/cal/"},
		{"Calendar", k.Calendar("uk holidays"), "/taskd/cal/uk%20holidays"},
		{"CalendarUsers", k.CalendarUsers("uk"), "/taskd/calref/uk/"},
		{"CalendarTaskRef", k.CalendarTaskRef("uk", "bob/x", tid), "/taskd/calref/uk/t/bob%2Fx/" + tid},
		{"CalendarLocalRef", k.CalendarLocalRef("uk", "n1", "bob/x", tid), "/taskd/calref/uk/n/n1/bob%2Fx/" + tid},
		{"CalendarBaseRef", k.CalendarBaseRef("uk", "uk/scot"), "/taskd/calref/uk/c/uk%2Fscot"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestSplitPlacementKeys(t *testing.T) {
	k := keyspace.New("/taskd/")
	if node, ok := k.SplitRebalanceRequest(k.RebalanceRequest("n1")); !ok || node != "n1" {
		t.Errorf("SplitRebalanceRequest(RebalanceRequest(n1)) = %q, %v", node, ok)
	}
	for _, key := range []string{k.DrainRequest("n1"), k.Controls() + "a/b/rebalance", k.Control("n1")} {
		if node, ok := k.SplitRebalanceRequest(key); ok {
			t.Errorf("SplitRebalanceRequest(%q) = %q, true", key, node)
		}
	}
	for _, id := range []string{"bob", "bob/x", "José"} {
		if got, err := k.SplitMapping(k.Mapping(id)); err != nil || got != id {
			t.Errorf("SplitMapping(Mapping(%q)) = %q, %v", id, got, err)
		}
	}
	for _, key := range []string{k.Status("bob"), "/taskd/map/%zz", "/taskd/map/"} {
		if got, err := k.SplitMapping(key); err == nil {
			t.Errorf("SplitMapping(%q) = %q, nil; want an error", key, got)
		}
	}
	if !strings.HasPrefix(k.Entry("n1", "bob", tid), k.Entries("n1", "bob")) || strings.HasPrefix(k.Entry("n1", "bob.x", tid), k.Entries("n1", "bob")) {
		t.Error("an identity's entries must be under its Entries prefix, and no other identity's")
	}
}

package pending

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

const tid = "01h00000000000000000000000"

func TestKeysLayout(t *testing.T) {
	k := NewKeys("/taskd/")
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
		{"other prefix", NewKeys("/c2/").Task("bob", tid), "/c2/task/bob/" + tid},
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
	k := NewKeys("/taskd/")
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
	src := &IDSource{now: fixedClock(base)}
	for _, prefix := range []string{"/taskd/", "/", "x/y/"} {
		k := NewKeys(prefix)
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
	k := NewKeys("/taskd/")
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
	k := NewKeys("/taskd/")
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

func TestTaskAt(t *testing.T) {
	k := NewKeys("/taskd/")
	for _, rev := range []int64{0, 1, 12345} {
		cmp := k.TaskAt("bob/x", tid, rev)
		c := cmp.GetCompare()
		if string(c.GetKey()) != k.Task("bob/x", tid) || c.GetTarget() != pb.Compare_MOD ||
			c.GetResult() != pb.Compare_EQUAL || c.GetModRevision() != rev {
			t.Errorf("TaskAt(rev %d) = %v", rev, c)
		}
	}
}

func BenchmarkTaskKey(b *testing.B) {
	k := NewKeys("/taskd/")
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
	k := NewKeys("/taskd/")
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

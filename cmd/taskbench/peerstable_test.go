package main

import (
	"bytes"
	"math"
	"sort"
	"strings"
	"testing"
)

func TestPercentileMs(t *testing.T) {
	var s []float64
	for i := 100; i >= 1; i-- { // 100 … 1, unsorted on purpose
		s = append(s, float64(i))
	}
	for _, c := range []struct {
		p    float64
		want float64
	}{{0, 1}, {0.5, 51}, {0.99, 100}, {1, 100}} {
		if got := percentileMs(s, c.p); got != c.want {
			t.Errorf("percentileMs(1..100, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if s[0] != 100 {
		t.Errorf("percentileMs sorted its input in place")
	}
	if got := percentileMs(nil, 0.5); got != 0 {
		t.Errorf("percentileMs(nil) = %v, want 0", got)
	}
	// The same index as taskbench's lag figures: element n*99/100.
	ten := make([]float64, 10000)
	for i := range ten {
		ten[i] = float64(i)
	}
	if got := percentileMs(ten, 0.99); got != 9900 {
		t.Errorf("p99 of 0..9999 = %v, want 9900", got)
	}
}

func TestNormalisedRatio(t *testing.T) {
	// taskd 6,000/s on a 12,000/s etcd (0.5 of Put); the peer 1,000/s on a
	// 10,000/s reference (0.1 of Put): taskd does 5× the work per Put.
	if got := normalisedRatio(6000, 12000, 1000, 10000); math.Abs(got-5) > 1e-9 {
		t.Errorf("normalisedRatio = %v, want 5", got)
	}
	// A machine twice as fast for the peer does not change the ratio.
	if a, b := normalisedRatio(6000, 12000, 1000, 10000), normalisedRatio(6000, 12000, 2000, 20000); math.Abs(a-b) > 1e-9 {
		t.Errorf("ratio changed with the peer's machine speed: %v vs %v", a, b)
	}
	for _, in := range [][4]float64{{0, 1, 1, 1}, {1, 0, 1, 1}, {1, 1, 0, 1}, {1, 1, 1, 0}} {
		if got := normalisedRatio(in[0], in[1], in[2], in[3]); got != 0 {
			t.Errorf("normalisedRatio%v = %v, want 0 for a missing input", in, got)
		}
	}
}

func TestComparisons(t *testing.T) {
	taskd := peerResult{Peer: "taskd", Status: "ok", PutRef: 12000, Figures: []peerFigure{
		{Name: "oneshot", PerSec: 6000, Setting: "t1"},
		{Name: "oneshot_batch", PerSec: 9000, Setting: "t2"},
		{Name: "burst", P50Ms: 300, P99Ms: 600, MaxMs: 700},
	}}
	peers := []peerResult{
		{Peer: "river", Status: "ok", PutRef: 10000, Figures: []peerFigure{
			{Name: "oneshot", PerSec: 1000, Setting: "r1"},
			{Name: "oneshot_tuned", PerSec: 3000},
			{Name: "burst", P50Ms: 2000, P99Ms: 4000, MaxMs: 5000},
		}},
		{Peer: "go-etcd-cron", Status: "unavailable: etcd 3.5 did not start"},
		{Peer: "asynq", Status: "ok", PutRef: 10000, Figures: []peerFigure{{Name: "oneshot", PerSec: 500}}},
	}
	var runs []peerRun
	for _, p := range peers {
		runs = append(runs, peerRun{Peer: p, Taskd: taskd})
	}
	cs := comparisons(runs)
	byKey := map[string]comparison{}
	for _, c := range cs {
		byKey[c.Peer+"/"+c.Figure] = c
	}
	check := func(key string, ratio float64, status string) {
		t.Helper()
		c, ok := byKey[key]
		if !ok {
			t.Fatalf("no comparison %s in %+v", key, cs)
		}
		if math.Abs(c.Ratio-ratio) > 1e-9 || c.Status != status {
			t.Errorf("%s: ratio %v status %q, want %v %q", key, c.Ratio, c.Status, ratio, status)
		}
	}
	check("river/oneshot", 5, "ok")
	check("river/oneshot_tuned", (9000.0/12000)/(3000.0/10000), "ok") // against taskd's batch figure
	check("river/burst", 0.15, "ok")                                  // 600 ms ÷ 4,000 ms, not normalised
	check("asynq/oneshot", 10, "ok")
	// A peer that did not run keeps its lines, with its status and no ratio.
	check("go-etcd-cron/oneshot", 0, "unavailable: etcd 3.5 did not start")
	check("go-etcd-cron/periodic", 0, "unavailable: etcd 3.5 did not start")
	check("go-etcd-cron/burst", 0, "unavailable: etcd 3.5 did not start")
	if len(cs) != 7 {
		t.Errorf("%d comparisons, want 7: %+v", len(cs), cs)
	}
	if c := byKey["river/burst"]; c.Unit != "p99 ms late" || c.PeerValue != 4000 || c.TaskdValue != 600 {
		t.Errorf("river/burst: %+v", c)
	}

	// taskd's own failure marks every line.
	failed := taskd
	failed.Status = "failed: boom"
	for _, c := range comparisons([]peerRun{{Peer: peers[0], Taskd: failed}}) {
		if c.Ratio != 0 || !strings.Contains(c.Status, "boom") {
			t.Errorf("with taskd failed: %+v", c)
		}
	}

	var buf bytes.Buffer
	printPeerTable(&buf, cs)
	out := buf.String()
	for _, want := range []string{"taskd ÷ peer", "river", "5.00", "0.15 (p99, raw)", "unavailable: etcd 3.5 did not start", "6000/s", "(12000/s)", "r1 | t1"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if got := strings.Count(out, "\n"); got != len(cs)+1 {
		t.Errorf("table has %d lines, want %d:\n%s", got, len(cs)+1, out)
	}
}

func TestTaskdFiguresFor(t *testing.T) {
	for peer, want := range map[string]string{
		"river":          "burst oneshot oneshot_batch",
		"asynq":          "burst oneshot",
		"asynq-everysec": "oneshot",
		"go-etcd-cron":   "burst oneshot periodic",
	} {
		var got []string
		for n := range taskdFiguresFor(peer) {
			got = append(got, n)
		}
		sort.Strings(got)
		if strings.Join(got, " ") != want {
			t.Errorf("taskdFiguresFor(%s) = %v, want %s", peer, got, want)
		}
	}
}

func TestMatchingLines(t *testing.T) {
	in := []byte("a level=INFO x\nb level=ERROR y\nc duration: 2500 ms\n\nd level=WARN z\n")
	got := matchingLines(in, "level=ERROR", "level=WARN", "duration:")
	want := []string{"b level=ERROR y", "c duration: 2500 ms", "d level=WARN z"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("matchingLines = %q, want %q", got, want)
	}
	long := bytes.Repeat([]byte("level=ERROR "), 100)
	if got := matchingLines(long, "level=ERROR"); len(got) != 1 || len(got[0]) > 310 {
		t.Errorf("a long line is not cut: %d bytes", len(got[0]))
	}
	many := bytes.Repeat([]byte("level=ERROR\n"), 50)
	if got := matchingLines(many, "level=ERROR"); len(got) != 20 {
		t.Errorf("%d lines kept, want at most 20", len(got))
	}
}

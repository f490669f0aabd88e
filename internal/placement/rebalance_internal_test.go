package placement

import (
	"fmt"
	"testing"
)

// planned renders a plan as "from>to:count" per source and target.
func planned(plan []rebalanceMoves) string {
	s := ""
	for _, p := range plan {
		counts := map[string]int{}
		var order []string
		for _, c := range p.to {
			if counts[c.Name] == 0 {
				order = append(order, c.Name)
			}
			counts[c.Name]++
		}
		for _, to := range order {
			s += fmt.Sprintf("%s>%s:%d ", p.from.Name, to, counts[to])
		}
	}
	return s
}

// TestPlanRebalance checks the plans of one round: from the most to the
// least loaded, at most rate moves, none once the spread is within the
// tolerance (at least one identity), loads of the candidates unchanged.
func TestPlanRebalance(t *testing.T) {
	nodes := func(loads ...int64) []*Candidate {
		var cs []*Candidate
		for i, l := range loads {
			cs = append(cs, &Candidate{Name: string(rune('a' + i)), Load: l})
		}
		return cs
	}
	tests := []struct {
		name      string
		live      []*Candidate
		rate, tol int
		want      string
	}{
		{"one node", nodes(100), 50, 10, ""},
		{"empty", nodes(0, 0), 50, 10, ""},
		{"within the slack of one", nodes(3, 2), 50, 0, ""},
		{"two apart, no tolerance", nodes(3, 1), 50, 0, "a>b:1 "},
		{"a joining node, rate-bound", nodes(100, 0), 10, 10, "a>b:10 "},
		{"a joining node, to the tolerance", nodes(100, 0), 50, 10, "a>b:48 "},
		{"within 10% of the mean", nodes(52, 48), 50, 10, ""},
		{"just over 10% of the mean", nodes(53, 47), 50, 10, "a>b:1 "},
		{"one of three joins", nodes(30, 30, 0), 50, 10, "a>c:10 b>c:9 "},
		{"ties by name", nodes(10, 10, 0, 0), 2, 0, "a>c:1 b>d:1 "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := make([]int64, len(tc.live))
			for i, c := range tc.live {
				before[i] = c.Load
			}
			plan := planRebalance(tc.live, tc.rate, tc.tol)
			if got := planned(plan); got != tc.want {
				t.Errorf("plan %q, want %q", got, tc.want)
			}
			moves := 0
			for _, p := range plan {
				moves += len(p.to)
			}
			if moves > tc.rate {
				t.Errorf("%d moves planned, rate %d", moves, tc.rate)
			}
			for i, c := range tc.live {
				if c.Load != before[i] {
					t.Errorf("node %s's load changed from %d to %d", c.Name, before[i], c.Load)
				}
			}
		})
	}
}

// TestRebalanceRequestEncoding checks that a request reads back as written,
// and that what encode never writes is refused.
func TestRebalanceRequestEncoding(t *testing.T) {
	b := &Candidate{Name: "b", Inc: "0a1b", Lease: 7, Rev: 42}
	c := &Candidate{Name: "c.2", Inc: "ff", Lease: 8, Rev: 43}
	req := newRequest(rebalanceMoves{from: &Candidate{Name: "a", Inc: "01"}, to: []*Candidate{b, c, b}}, 5, "lead")
	got, err := ParseRequest(req.Encode())
	if err != nil || fmt.Sprint(got) != fmt.Sprint(req) || got.Total() != 3 {
		t.Fatalf("read back %+v, %v; wrote %+v", got, err, req)
	}
	claim := Request{Source: "01", LeaderRev: 5, Leader: "lead", Claimed: true}
	if got, err := ParseRequest(claim.Encode()); err != nil || !got.Claimed || got.Source != "01" {
		t.Errorf("claim read back %+v, %v", got, err)
	}
	head := "rebalance v1\nsource 01\nleader 5 lead\n"
	for _, bad := range []string{
		"",
		head,
		head + "to b 0a1b 7 42 1", // no final newline
		"rebalance v2\nsource 01\nleader 5 lead\nto b 0a1b 7 42 1\n",
		"rebalance v1\nsource 0X\nleader 5 lead\nto b 0a1b 7 42 1\n",
		head + "to b 0a1b 7 42 0\n",                   // no move
		head + "to b 0a1b 7 -42 1\n",                  // negative revision
		head + "to b 0a1b 7 042 1\n",                  // not as written
		head + "to b/x 0a1b 7 42 1\n",                 // bad name
		head + "to b 0a1b 7 42 1 9\n",                 // a field too many
		head + "to b 0a1b 7 42 1\nto b 0a1b 7 42 1\n", // b twice
		head + "to b 0a1b 7 42 10001\n",               // over the bound
		head + "claimed\nto b 0a1b 7 42 1\n",
	} {
		if r, err := ParseRequest(bad); err == nil {
			t.Errorf("%q read as %+v", bad, r)
		}
	}
}

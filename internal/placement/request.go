package placement

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/taskd/taskd/internal/taskspec"
)

// A rebalancing request, as the leader writes it into a source node's
// control area (rebalance.go) and the source reads, serves and marks
// claimed (internal/ownership's rebalance.go).

// maxRequestMoves and maxRequestTargets bound a request as parsed: the
// most identities (the largest --rebalance-rate) and distinct targets.
const (
	maxRequestMoves   = 10000
	maxRequestTargets = 1000
	maxRequestBytes   = 128 << 10
)

// Request asks the node of incarnation Source to move Count identities to
// each target, on behalf of the leadership whose leader key was created at
// LeaderRev.
type Request struct {
	Source    string
	LeaderRev int64
	Leader    string // the leader's name, for the log
	Targets   []Target
	// Claimed marks a request the source has begun to serve (no targets).
	Claimed bool
}

// Target is a target as the leader read its registration.
type Target struct {
	Name, Inc  string
	Lease, Rev int64
	Count      int
}

// newRequest is the request of one source's planned moves.
func newRequest(p rebalanceMoves, leaderRev int64, leader string) Request {
	req := Request{Source: p.from.Inc, LeaderRev: leaderRev, Leader: leader}
	at := map[string]int{}
	for _, c := range p.to {
		i, ok := at[c.Name]
		if !ok {
			if len(req.Targets) == maxRequestTargets {
				continue
			}
			i = len(req.Targets)
			at[c.Name] = i
			req.Targets = append(req.Targets, Target{Name: c.Name, Inc: c.Inc, Lease: c.Lease, Rev: c.Rev})
		}
		req.Targets[i].Count++
	}
	return req
}

// Total is the number of identities asked for.
func (r Request) Total() int {
	t := 0
	for _, tg := range r.Targets {
		t += tg.Count
	}
	return t
}

// Encode writes the request as lines of text:
//
//	rebalance v1
//	source <incarnation>
//	leader <leader key's create revision> <name>
//	to <name> <incarnation> <lease> <registration revision> <count>  (per target)
//	claimed  (instead of the targets, once the source began serving)
func (r Request) Encode() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rebalance v1\nsource %s\nleader %d %s\n", r.Source, r.LeaderRev, r.Leader)
	if r.Claimed {
		b.WriteString("claimed\n")
		return b.String()
	}
	for _, t := range r.Targets {
		fmt.Fprintf(&b, "to %s %s %d %d %d\n", t.Name, t.Inc, t.Lease, t.Rev, t.Count)
	}
	return b.String()
}

// ParseRequest reads an encoded request, strictly: every line as Encode
// writes it, names valid, numbers positive, within the bounds.
func ParseRequest(s string) (Request, error) {
	var r Request
	if len(s) > maxRequestBytes {
		return r, fmt.Errorf("request of %d bytes, the limit is %d", len(s), maxRequestBytes)
	}
	lines := strings.Split(s, "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" {
		return r, errors.New("request truncated")
	}
	lines = lines[:len(lines)-1]
	if lines[0] != "rebalance v1" {
		return r, fmt.Errorf("unknown request %q", lines[0])
	}
	src := strings.Split(lines[1], " ")
	if len(src) != 2 || src[0] != "source" || !validIncarnation(src[1]) {
		return r, fmt.Errorf("bad source line %q", lines[1])
	}
	r.Source = src[1]
	ld := strings.Split(lines[2], " ")
	if len(ld) != 3 || ld[0] != "leader" || taskspec.CheckNodeName("leader", ld[2]) != nil {
		return r, fmt.Errorf("bad leader line %q", lines[2])
	}
	var err error
	if r.LeaderRev, err = positive(ld[1]); err != nil {
		return r, fmt.Errorf("bad leader line %q: %w", lines[2], err)
	}
	r.Leader = ld[2]
	if len(lines) == 4 && lines[3] == "claimed" {
		r.Claimed = true
		return r, nil
	}
	if len(lines) == 3 {
		return r, errors.New("a request with no target")
	}
	if len(lines)-3 > maxRequestTargets {
		return r, fmt.Errorf("%d targets, the limit is %d", len(lines)-3, maxRequestTargets)
	}
	seen := map[string]bool{}
	total := int64(0)
	for _, line := range lines[3:] {
		f := strings.Split(line, " ")
		if len(f) != 6 || f[0] != "to" || taskspec.CheckNodeName("target", f[1]) != nil || !validIncarnation(f[2]) || seen[f[1]] {
			return r, fmt.Errorf("bad target line %q", line)
		}
		seen[f[1]] = true
		t := Target{Name: f[1], Inc: f[2]}
		var count int64
		if t.Lease, err = positive(f[3]); err == nil {
			if t.Rev, err = positive(f[4]); err == nil {
				count, err = positive(f[5])
			}
		}
		if err != nil {
			return r, fmt.Errorf("bad target line %q: %w", line, err)
		}
		if total += count; total > maxRequestMoves {
			return r, fmt.Errorf("more than %d moves asked for", maxRequestMoves)
		}
		t.Count = int(count)
		r.Targets = append(r.Targets, t)
	}
	return r, nil
}

// positive parses a decimal number greater than zero.
func positive(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || strconv.FormatInt(v, 10) != s {
		return 0, fmt.Errorf("%q is not a positive number", s)
	}
	return v, nil
}

// validIncarnation reports whether s can be an incarnation (lower-case hex).
func validIncarnation(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

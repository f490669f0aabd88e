package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/taskd/taskd/internal/keyspace"
	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// ScaleResult is one run of the scale scenario: nodes in-process nodes
// share identities identities (one pending task each); then the node that
// holds the most stops without handing them over (its lease revoked, as on
// expiry), and the placement leader reassigns them to the others.
type ScaleResult struct {
	Nodes      int `json:"nodes"`
	Identities int `json:"identities"`
	// PlacedMs: scheduling every identity's task (100 tasks per call, 16
	// calls at once, spread over the nodes) until all are mapped.
	PlacedMs float64 `json:"placed_ms"`
	// Spread of identities per node once placed (min, max).
	MinPerNode int `json:"min_per_node"`
	MaxPerNode int `json:"max_per_node"`
	// The dead node's identities: mapped to the survivors (the leader's
	// sweep), then loaded by them (their handoff areas empty).
	DeadIdentities int     `json:"dead_identities"`
	MappedMs       float64 `json:"reassign_mapped_ms"`
	LoadedMs       float64 `json:"reassign_loaded_ms"`
	// Spread of identities over the survivors afterwards (min, max).
	AfterMin int `json:"after_min_per_node"`
	AfterMax int `json:"after_max_per_node"`
}

// parseScale reads -scale, e.g. "2,5,10x100000": node counts, then the
// identities.
func parseScale(v string) (nodes []int, ids int, err error) {
	ns, is, ok := strings.Cut(v, "x")
	if !ok {
		return nil, 0, fmt.Errorf("-scale %q: want NODES[,NODES...]xIDENTITIES, e.g. 2,5,10x100000", v)
	}
	if ids, err = strconv.Atoi(is); err != nil || ids < 1 {
		return nil, 0, fmt.Errorf("-scale %q: identities must be a positive number", v)
	}
	for _, s := range strings.Split(ns, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 {
			return nil, 0, fmt.Errorf("-scale %q: node counts must be numbers of at least 2", v)
		}
		nodes = append(nodes, n)
	}
	return nodes, ids, nil
}

// measureScale runs the scale scenario for one node count under prefix.
// With spread the tasks are scheduled through every node in turn (each
// node maps the identities it schedules to itself), else all through the
// first node, which then holds every identity and is the one that dies.
func measureScale(ctx context.Context, etcdURL, prefix string, nodeCount, ids int, spread bool) (ScaleResult, error) {
	res := ScaleResult{Nodes: nodeCount, Identities: ids}
	names := make([]string, nodeCount)
	for i := range names {
		names[i] = fmt.Sprintf("s%02d", i)
	}
	noop := taskservice.HandlerFunc(func(context.Context, *taskservice.Run) error { return nil })
	nodes, stop, err := startNodes(ctx, etcdURL, prefix, names, noop, nodeOptions{})
	if err != nil {
		return res, err
	}
	defer stop()
	cli, err := taskservice.DialEtcd([]string{etcdURL})
	if err != nil {
		return res, err
	}
	defer cli.Close()
	keys := keyspace.New(prefix)
	perNode := func() (map[string]int, error) {
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		resp, err := cli.Get(c, keys.AllOwned(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return nil, err
		}
		out := map[string]int{}
		for _, kv := range resp.Kvs {
			node, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), keys.AllOwned()), "/")
			out[node]++
		}
		return out, nil
	}
	total := func(m map[string]int) (sum, lo, hi int) {
		lo = -1
		for _, v := range m {
			sum += v
			if lo < 0 || v < lo {
				lo = v
			}
			hi = max(hi, v)
		}
		return sum, lo, hi
	}
	waitFor := func(what string, cond func() (bool, error)) error {
		deadline := time.Now().Add(10 * time.Minute)
		for {
			ok, err := cond()
			if err != nil {
				return err
			}
			if ok {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: not within 10 minutes", what)
			}
			time.Sleep(20 * time.Millisecond) // polling interval of the measurement
		}
	}

	began := time.Now()
	calls := (ids + 99) / 100
	if _, err := parallel(calls, 16, func(k int) error {
		var batch []*taskdv1.TaskSpec
		for j := k * 100; j < (k+1)*100 && j < ids; j++ {
			batch = append(batch, &taskdv1.TaskSpec{Identity: fmt.Sprintf("sc-%07d", j), Kind: "tick",
				Scope:    taskdv1.Scope_SCOPE_IDENTITY,
				Triggers: []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{Delay: durationpb.New(time.Hour)}}}}})
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		via := nodes[0]
		if spread {
			via = nodes[k%len(nodes)]
		}
		_, err := via.Schedule(cctx, batch)
		return err
	}); err != nil {
		return res, fmt.Errorf("schedule: %w", err)
	}
	var placed map[string]int
	if err := waitFor("all identities mapped", func() (bool, error) {
		m, err := perNode()
		placed = m
		sum, _, _ := total(m)
		return sum >= ids, err
	}); err != nil {
		return res, err
	}
	res.PlacedMs = ms(time.Since(began))
	_, res.MinPerNode, res.MaxPerNode = total(placed)

	// The node holding the most identities dies (its lease revoked).
	victim := 0
	for i, n := range names {
		if placed[n] > placed[names[victim]] {
			victim = i
		}
	}
	res.DeadIdentities = placed[names[victim]]
	began = time.Now()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_ = nodes[victim].Stop(sctx)
	cancel()
	var after map[string]int
	if err := waitFor("the dead node's identities mapped", func() (bool, error) {
		m, err := perNode()
		after = m
		sum, _, _ := total(m)
		return err == nil && m[names[victim]] == 0 && sum >= ids, err
	}); err != nil {
		return res, err
	}
	res.MappedMs = ms(time.Since(began))
	if err := waitFor("the dead node's identities loaded", func() (bool, error) {
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		resp, err := cli.Get(c, keys.Handoffs(), clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 0, err
	}); err != nil {
		return res, err
	}
	res.LoadedMs = ms(time.Since(began))
	delete(after, names[victim])
	_, res.AfterMin, res.AfterMax = total(after)
	return res, nil
}

// writeScale prints the scale results as a table.
func writeScale(rs []ScaleResult) string {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Nodes < rs[j].Nodes })
	var b strings.Builder
	fmt.Fprintf(&b, "%-6s %-11s %-10s %-16s %-14s %-14s %-14s %s\n", "nodes", "identities", "placed", "per node", "dead node's", "mapped in", "loaded in", "per survivor")
	for _, r := range rs {
		fmt.Fprintf(&b, "%-6d %-11d %-10s %-16s %-14d %-14s %-14s %s\n", r.Nodes, r.Identities,
			fmt.Sprintf("%.1f s", r.PlacedMs/1000), fmt.Sprintf("%d–%d", r.MinPerNode, r.MaxPerNode), r.DeadIdentities,
			fmt.Sprintf("%.0f ms", r.MappedMs), fmt.Sprintf("%.0f ms", r.LoadedMs), fmt.Sprintf("%d–%d", r.AfterMin, r.AfterMax))
	}
	return b.String()
}

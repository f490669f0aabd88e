package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/taskd/taskd/pkg/taskservice"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// fairnessResult is what a hot identity's backlog does to other
// identities' runs.
type fairnessResult struct {
	HotTasks       int     `json:"hot_tasks"`
	HotTasksPerSec float64 `json:"hot_tasks_per_sec"`
	HotRatio       float64 `json:"hot_ratio_to_put"`
	HotSeconds     float64 `json:"hot_seconds"` // due instant → last hot run's start
	ColdIdentities int     `json:"cold_identities"`
	ColdTasks      int     `json:"cold_tasks"`
	// ColdDuringBurst counts the cold runs due before the hot identity's
	// last run started: those that had to get past its backlog.
	ColdDuringBurst int     `json:"cold_during_burst"`
	ColdP50Ms       float64 `json:"cold_lateness_p50_ms"`
	ColdP99Ms       float64 `json:"cold_lateness_p99_ms"`
	ColdMaxMs       float64 `json:"cold_lateness_max_ms"`
	// FencedSamples counts the Stats samples (every 10 ms, from the due
	// instant to the end) that found the node self-fenced: a machine too
	// busy to renew the lease in time stalls every start.
	FencedSamples int `json:"self_fenced_samples"`
}

// measureFairness stores hot one-shot tasks of one identity, all due at
// one instant, and, for each of cold identities, perCold tasks due at
// instants spread over spread from that instant; it returns the cold runs'
// lateness (run start − fire time) and the hot identity's throughput (due
// instant to its last run's start). Everything is scheduled before the
// due instant, in calls of 100 tasks.
func measureFairness(ctx context.Context, etcdURL string, hot, cold, perCold int, spread time.Duration, c int) (fairnessResult, error) {
	res := fairnessResult{HotTasks: hot, ColdIdentities: cold, ColdTasks: cold * perCold}
	var (
		mu      sync.Mutex
		lags    []time.Duration
		fires   []time.Time
		hotDone int
		hotLast time.Time
	)
	all := make(chan struct{})
	check := func() {
		if hotDone == hot && len(lags) == res.ColdTasks {
			close(all)
		}
	}
	h := taskservice.HandlerFunc(func(ctx context.Context, r *taskservice.Run) error {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if r.Identity == "hot" {
			hotDone++
			hotLast = now
		} else {
			lags = append(lags, now.Sub(r.FireTime))
			fires = append(fires, r.FireTime)
		}
		check()
		return nil
	})
	nodes, stop, err := startNodes(ctx, etcdURL, "/bench-fair/", []string{"fair"}, h, nodeOptions{})
	if err != nil {
		return res, err
	}
	defer stop()
	// The due instant leaves time to store everything: scheduling in
	// batches runs at tens of thousands of tasks a second.
	due := time.Now().Add(3*time.Second + time.Duration(hot+cold*perCold)*50*time.Microsecond).Truncate(time.Second).Add(time.Second)
	var specs [][]*taskdv1.TaskSpec
	for b := 0; b < hot; b += 100 {
		var batch []*taskdv1.TaskSpec
		for i := b; i < b+100 && i < hot; i++ {
			batch = append(batch, oneShot("hot", due))
		}
		specs = append(specs, batch)
	}
	var coldSpecs []*taskdv1.TaskSpec
	for i := range cold {
		for k := range perCold {
			// Identity i's k-th task: the instants of all cold tasks are
			// spread evenly over the burst, interleaved across identities.
			at := due.Add(spread * time.Duration(k*cold+i) / time.Duration(cold*perCold))
			coldSpecs = append(coldSpecs, oneShot(fmt.Sprintf("cold-%03d", i), at))
		}
	}
	for b := 0; b < len(coldSpecs); b += 100 {
		specs = append(specs, coldSpecs[b:min(b+100, len(coldSpecs))])
	}
	if _, err := parallel(len(specs), c, func(k int) error {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err := nodes[0].Schedule(cctx, specs[k])
		return err
	}); err != nil {
		return res, fmt.Errorf("schedule: %w", err)
	}
	if late := time.Since(due); late > 0 {
		return res, fmt.Errorf("scheduling ended %s after the due instant", late)
	}
	sampled := make(chan int)
	go func() {
		fenced := 0
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-all:
				sampled <- fenced
				return
			case <-tick.C:
				if nodes[0].Stats().SelfFenced {
					fenced++
				}
			}
		}
	}()
	select {
	case <-all:
		res.FencedSamples = <-sampled
	case <-time.After(5 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		return res, fmt.Errorf("only %d of %d hot and %d of %d cold runs in 5 minutes", hotDone, hot, len(lags), res.ColdTasks)
	}
	mu.Lock()
	defer mu.Unlock()
	d := hotLast.Sub(due)
	res.HotSeconds, res.HotTasksPerSec = d.Seconds(), float64(hot)/d.Seconds()
	for _, f := range fires {
		if f.Before(hotLast) {
			res.ColdDuringBurst++
		}
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	res.ColdP50Ms, res.ColdP99Ms, res.ColdMaxMs = ms(lags[len(lags)/2]), ms(lags[len(lags)*99/100]), ms(lags[len(lags)-1])
	return res, nil
}

package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/taskd/taskd/pkg/workers"
)

// workersCollector reads the remote workers' pool at each scrape.
type workersCollector struct{ pool *workers.Pool }

var (
	workersConnectedDesc = prometheus.NewDesc("taskd_workers_connected",
		"Remote workers connected to this node (their hello accepted).", nil, nil)
	workerStreamsDesc = prometheus.NewDesc("taskd_worker_streams",
		"Work streams open on this node, with or before their hello (at most --max-worker-streams).", nil, nil)
	workersCutOffDesc = prometheus.NewDesc("taskd_workers_cut_off_total",
		"Remote workers this node cut off, by reason: silent (nothing for three --worker-heartbeat intervals), "+
			"not_reading (a message waited that long for the worker to read), queue_full (its queue of messages was full). "+
			"Their runs in flight end as failed attempts, retried.", []string{"reason"}, nil)
)

func (c *workersCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- workersConnectedDesc
	ch <- workerStreamsDesc
	ch <- workersCutOffDesc
}

func (c *workersCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.pool.Stats()
	ch <- prometheus.MustNewConstMetric(workersConnectedDesc, prometheus.GaugeValue, float64(st.Workers))
	ch <- prometheus.MustNewConstMetric(workerStreamsDesc, prometheus.GaugeValue, float64(st.Streams))
	for _, r := range workers.CutReasons {
		ch <- prometheus.MustNewConstMetric(workersCutOffDesc, prometheus.CounterValue, float64(st.CutOff[r]), r)
	}
}

package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
)

// The pure part of the peer comparison: percentiles, ratios and the table.

// peerFigure is one figure of a peer or of taskd: a rate (PerSec) or the
// lateness of a burst (P50Ms, P99Ms, MaxMs).
type peerFigure struct {
	Name    string  `json:"name"`
	Setting string  `json:"setting"`
	Count   int     `json:"count"`
	Seconds float64 `json:"seconds,omitempty"`
	PerSec  float64 `json:"per_sec,omitempty"`
	P50Ms   float64 `json:"p50_ms,omitempty"`
	P99Ms   float64 `json:"p99_ms,omitempty"`
	MaxMs   float64 `json:"max_ms,omitempty"`
}

// isLateness says whether the figure is a burst's lateness, not a rate.
func (f peerFigure) isLateness() bool { return f.PerSec == 0 && f.P99Ms != 0 }

// peerResult is one run of one peer (or of taskd): its etcd raw Put
// reference measured right before, its status and its figures.
type peerResult struct {
	Peer    string       `json:"peer"`
	Version string       `json:"version,omitempty"`
	Store   string       `json:"store,omitempty"`
	Status  string       `json:"status"` // "ok", "unavailable: …" or "failed: …"
	PutRef  float64      `json:"etcd_put_ref_per_sec,omitempty"`
	Figures []peerFigure `json:"figures,omitempty"`
	// Warnings are the errors the peer logged while it ran (a River fetch
	// that timed out, say) and its store's slow statements and lock waits:
	// what the reader needs to judge a figure that came out low.
	Warnings []string `json:"warnings,omitempty"`
}

func (r peerResult) figure(name string) (peerFigure, bool) {
	for _, f := range r.Figures {
		if f.Name == name {
			return f, true
		}
	}
	return peerFigure{}, false
}

// comparison is one line of the table: a peer's figure beside taskd's.
type comparison struct {
	Peer         string  `json:"peer"`
	Figure       string  `json:"figure"`
	PeerSetting  string  `json:"peer_setting"`
	TaskdSetting string  `json:"taskd_setting"`
	Unit         string  `json:"unit"`
	PeerValue    float64 `json:"peer_value,omitempty"`
	TaskdValue   float64 `json:"taskd_value,omitempty"`
	PeerPutRef   float64 `json:"peer_put_ref_per_sec,omitempty"`
	TaskdPutRef  float64 `json:"taskd_put_ref_per_sec,omitempty"`
	// Ratio is taskd ÷ peer: for rates, each normalised by the etcd Put
	// reference measured right before it (above 1: taskd does more); for
	// lateness, p99 over p99 (below 1: taskd is less late).
	Ratio  float64 `json:"ratio,omitempty"`
	Status string  `json:"status"`
}

// percentileMs returns the p-quantile of the samples (nearest rank from
// below: the element at index ⌊n·p⌋ of the sorted samples, as taskbench's
// lag figures do); 0 for no samples.
func percentileMs(samples []float64, p float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	i := int(math.Floor(float64(len(s))*p + 1e-9))
	return s[min(max(i, 0), len(s)-1)]
}

// normalisedRatio is (taskd ÷ its Put reference) ÷ (peer ÷ its Put
// reference): how much more work taskd does per unit of its store's raw
// write rate than the peer does; 0 when any input is missing.
func normalisedRatio(taskd, taskdPut, peer, peerPut float64) float64 {
	if taskd <= 0 || taskdPut <= 0 || peer <= 0 || peerPut <= 0 {
		return 0
	}
	return (taskd / taskdPut) / (peer / peerPut)
}

// compare builds one comparison of the peer's figure pf against taskd's
// figure tf; the peer result carries the status when the peer did not run.
func compare(peer peerResult, pf peerFigure, taskd peerResult, tf peerFigure, tok bool) comparison {
	c := comparison{Peer: peer.Peer, Figure: pf.Name, PeerSetting: pf.Setting, TaskdSetting: tf.Setting,
		PeerPutRef: peer.PutRef, TaskdPutRef: taskd.PutRef, Status: "ok"}
	switch {
	case peer.Status != "ok":
		c.Status = peer.Status
	case !tok:
		c.Status = "taskd figure missing: " + taskd.Status
	}
	if pf.isLateness() || tf.isLateness() {
		c.Unit = "p99 ms late"
		c.PeerValue, c.TaskdValue = pf.P99Ms, tf.P99Ms
		if c.Status == "ok" && pf.P99Ms > 0 {
			c.Ratio = tf.P99Ms / pf.P99Ms
		}
		return c
	}
	c.Unit = "per s"
	c.PeerValue, c.TaskdValue = pf.PerSec, tf.PerSec
	if c.Status == "ok" {
		c.Ratio = normalisedRatio(tf.PerSec, taskd.PutRef, pf.PerSec, peer.PutRef)
	}
	return c
}

// peerPairs names, for each peer figure, taskd's figure it is compared with.
var peerPairs = map[string]string{
	"oneshot":          "oneshot",
	"oneshot_tuned":    "oneshot_batch",
	"oneshot_everysec": "oneshot",
	"periodic":         "periodic",
	"burst":            "burst",
	"burst_tuned":      "burst",
}

// peerFigureNames lists the figures each peer is expected to report, so a
// peer that did not run still has its lines (with its status).
var peerFigureNames = map[string][]string{
	"river":          {"oneshot", "oneshot_tuned", "burst"},
	"asynq":          {"oneshot", "burst"},
	"asynq-everysec": {"oneshot_everysec"},
	"go-etcd-cron":   {"oneshot", "periodic", "burst"},
}

// peerRun is one peer's run and the taskd run made right after it, with
// the figures it is compared on, so that each pair is measured in the same
// stretch of the machine's time.
type peerRun struct {
	Peer  peerResult `json:"peer"`
	Taskd peerResult `json:"taskd"`
}

// taskdFiguresFor names the taskd figures a peer's lines are compared with.
func taskdFiguresFor(peer string) map[string]bool {
	want := map[string]bool{}
	for _, n := range peerFigureNames[peer] {
		want[peerPairs[n]] = true
	}
	return want
}

// comparisons pairs every peer figure with taskd's of the same run.
func comparisons(runs []peerRun) []comparison {
	var out []comparison
	for _, run := range runs {
		p, taskd := run.Peer, run.Taskd
		names := peerFigureNames[p.Peer]
		if p.Status == "ok" {
			names = nil
			for _, f := range p.Figures {
				if _, ok := peerPairs[f.Name]; ok {
					names = append(names, f.Name)
				}
			}
		}
		for _, n := range names {
			pf, ok := p.figure(n)
			if !ok {
				pf = peerFigure{Name: n}
			}
			tf, tok := taskd.figure(peerPairs[n])
			out = append(out, compare(p, pf, taskd, tf, tok && taskd.Status == "ok"))
		}
	}
	return out
}

// value renders a comparison's value.
func value(v float64, unit string) string {
	if v == 0 {
		return "—"
	}
	if unit == "per s" {
		return fmt.Sprintf("%.0f/s", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// printPeerTable writes the one table of the peer comparison.
func printPeerTable(w io.Writer, cs []comparison) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "peer\tfigure\tpeer\t(Put ref)\ttaskd\t(Put ref)\ttaskd ÷ peer\tpeer setting | taskd setting")
	for _, c := range cs {
		ratio := "—"
		if c.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f", c.Ratio)
			if c.Unit != "per s" {
				ratio += " (p99, raw)"
			}
		}
		if c.Status != "ok" {
			ratio = c.Status
		}
		put := func(v float64) string {
			if v == 0 || c.Unit != "per s" {
				return ""
			}
			return fmt.Sprintf("(%.0f/s)", v)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s | %s\n", c.Peer, c.Figure, value(c.PeerValue, c.Unit), put(c.PeerPutRef),
			value(c.TaskdValue, c.Unit), put(c.TaskdPutRef), ratio, oneLine(c.PeerSetting), oneLine(c.TaskdSetting))
	}
	_ = tw.Flush()
}

func oneLine(s string) string {
	if s == "" {
		return "—"
	}
	return strings.Join(strings.Fields(s), " ")
}

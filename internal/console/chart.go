package console

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// chartMinutes is how far back the chart goes: one bucket a minute.
const chartMinutes = 60

// lagSamples bounds the fire lags kept per node and minute; past it a
// reservoir sample stands for the minute, so p50 and p99 stay estimates
// over a uniform sample and memory stays bounded.
const lagSamples = 1024

// chart is, per node, a ring of the last chartMinutes minutes: runs
// started and fire lags. It is held in memory by each node's console and
// starts empty when the node starts.
type chart struct {
	now   func() time.Time
	since time.Time // when counting began

	mu    sync.Mutex
	nodes map[string]*[chartMinutes]minute
}

// minute is one bucket of the ring.
type minute struct {
	at   int64 // Unix minute the bucket holds; a stale one is reset on use
	runs int
	lags []time.Duration // up to lagSamples, a reservoir past that
	seen int             // lags offered this minute
	max  time.Duration
}

func newChart(now func() time.Time) *chart {
	return &chart{now: now, since: now(), nodes: map[string]*[chartMinutes]minute{}}
}

// add counts one run started on node at the time at, with its fire lag
// (negative: unknown).
func (c *chart) add(node string, at time.Time, lag time.Duration) {
	m := at.Unix() / 60
	nowMin := c.now().Unix() / 60
	if node == "" || m <= nowMin-chartMinutes || m > nowMin+1 {
		return // outside the ring (or from a clock far ahead)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ring := c.nodes[node]
	if ring == nil {
		ring = new([chartMinutes]minute)
		c.nodes[node] = ring
	}
	b := &ring[m%chartMinutes]
	if b.at != m {
		*b = minute{at: m}
	}
	b.runs++
	if lag < 0 {
		return
	}
	b.seen++
	b.max = max(b.max, lag)
	if len(b.lags) < lagSamples {
		b.lags = append(b.lags, lag)
	} else if i := rand.IntN(b.seen); i < lagSamples {
		b.lags[i] = lag
	}
}

// point is one minute of one node's chart.
type point struct {
	Minute   time.Time
	Runs     int
	Lagged   int // runs whose fire lag is known
	P50, P99 time.Duration
	Max      time.Duration
}

// series is one node's last hour, oldest minute first.
type series struct {
	Node   string
	Points []point
	Runs   int // in the hour
	Lagged int
}

// snapshot returns every node's last hour, by node name.
func (c *chart) snapshot() []series {
	nowMin := c.now().Unix() / 60
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.nodes))
	for n := range c.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]series, 0, len(names))
	for _, n := range names {
		ring := c.nodes[n]
		s := series{Node: n, Points: make([]point, chartMinutes)}
		for i := range chartMinutes {
			m := nowMin - chartMinutes + 1 + int64(i)
			p := point{Minute: unixMinute(m)}
			if b := &ring[m%chartMinutes]; b.at == m {
				p.Runs, p.Lagged, p.Max = b.runs, b.seen, b.max
				if len(b.lags) > 0 {
					l := slices.Clone(b.lags)
					slices.Sort(l)
					p.P50, p.P99 = quantile(l, 0.50), quantile(l, 0.99)
				}
			}
			s.Points[i] = p
			s.Runs += p.Runs
			s.Lagged += p.Lagged
		}
		out = append(out, s)
	}
	return out
}

// empty is the last hour of a node without runs.
func (c *chart) empty(node string) series {
	nowMin := c.now().Unix() / 60
	s := series{Node: node, Points: make([]point, chartMinutes)}
	for i := range s.Points {
		s.Points[i].Minute = unixMinute(nowMin - chartMinutes + 1 + int64(i))
	}
	return s
}

// unixMinute is the start of Unix minute m, in UTC.
func unixMinute(m int64) time.Time { return time.Unix(m*60, 0).UTC() }

// quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// The SVG drawing of one series: a bar per minute for the runs and, over
// it, the p50 and p99 fire lag as lines on their own scale.
const (
	svgW, svgH           = 720, 160
	padL, padR           = 44, 56
	padT, padB           = 10, 22
	plotW, plotH         = svgW - padL - padR, svgH - padT - padB
	barGap       float64 = 1
)

// svgChart is what the chart template draws.
type svgChart struct {
	Node           string
	W, H           int
	Bars           []svgBar
	P50, P99       string   // polyline points; empty without lag data
	Dots           []svgDot // the lag points, so that a lone minute shows too
	RunsMax        int
	LagMax         string
	Ticks          []svgTick
	PlotX, PlotY   int
	PlotW, PlotH   int
	PlotR, PlotB   int
	Runs, Lagged   int
	LabelR, LabelY int
}

// svgDot marks one minute's p50 or p99 lag.
type svgDot struct {
	X, Y  float64
	Class string
}

type svgBar struct {
	X, Y, W, H float64
	Title      string
}

// svgTick labels a minute on the time axis: UTC, turned into the
// viewer's zone by the script (T is the minute in RFC 3339).
type svgTick struct {
	X     float64
	Y     int
	Label string
	T     string
}

// draw lays out s as an SVG chart.
func draw(s series) svgChart {
	ch := svgChart{Node: s.Node, W: svgW, H: svgH, PlotX: padL, PlotY: padT, PlotW: plotW, PlotH: plotH,
		PlotR: padL + plotW, PlotB: padT + plotH, Runs: s.Runs, Lagged: s.Lagged, LabelR: padL + plotW + 4, LabelY: padT + 10}
	runsMax, lagMax := 1, time.Duration(0)
	for _, p := range s.Points {
		runsMax = max(runsMax, p.Runs)
		if p.Lagged > 0 {
			lagMax = max(lagMax, p.P99)
		}
	}
	ch.RunsMax = runsMax
	slot := float64(plotW) / float64(len(s.Points))
	var p50, p99 []string
	for i, p := range s.Points {
		x := float64(padL) + float64(i)*slot
		if p.Runs > 0 {
			h := float64(plotH) * float64(p.Runs) / float64(runsMax)
			title := fmt.Sprintf("%s UTC: %d runs", p.Minute.Format("15:04"), p.Runs)
			if p.Lagged > 0 {
				title += fmt.Sprintf("; fire lag p50 %s, p99 %s, max %s", roundLag(p.P50), roundLag(p.P99), roundLag(p.Max))
			}
			ch.Bars = append(ch.Bars, svgBar{X: x + barGap/2, Y: float64(padT+plotH) - h, W: slot - barGap, H: h, Title: title})
		}
		if p.Lagged > 0 && lagMax > 0 {
			cx := x + slot/2
			y50 := float64(padT+plotH) - float64(plotH)*float64(p.P50)/float64(lagMax)
			y99 := float64(padT+plotH) - float64(plotH)*float64(p.P99)/float64(lagMax)
			p50 = append(p50, fmt.Sprintf("%.1f,%.1f", cx, y50))
			p99 = append(p99, fmt.Sprintf("%.1f,%.1f", cx, y99))
			ch.Dots = append(ch.Dots, svgDot{X: cx, Y: y50, Class: "p50"}, svgDot{X: cx, Y: y99, Class: "p99"})
		}
		if i%10 == 0 || i == len(s.Points)-1 {
			ch.Ticks = append(ch.Ticks, svgTick{X: x + slot/2, Y: padT + plotH + 16, Label: p.Minute.Format("15:04"), T: p.Minute.Format(time.RFC3339)})
		}
	}
	if len(p50) > 0 {
		ch.P50, ch.P99 = strings.Join(p50, " "), strings.Join(p99, " ")
		ch.LagMax = roundLag(lagMax).String()
	}
	return ch
}

// roundLag rounds a lag for people: whole ms below a minute's worth.
func roundLag(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	default:
		return d.Round(time.Microsecond)
	}
}

// Package peerout is what the peer benchmark's commands (bench/peers/*)
// print: one JSON Output on standard output, in the shape taskbench -peers
// reads. It is a module of its own, without dependencies, so that each peer
// module (which pins its peer's own dependencies) can share it.
package peerout

import (
	"encoding/json"
	"os"
	"strings"
)

// Figure is one measured figure.
type Figure struct {
	Name       string    `json:"name"`
	Setting    string    `json:"setting"`
	Count      int       `json:"count"`
	Seconds    float64   `json:"seconds"`
	PerSec     float64   `json:"per_sec,omitempty"`
	LatenessMs []float64 `json:"lateness_ms,omitempty"`
}

// Output is what a peer command prints.
type Output struct {
	Peer    string   `json:"peer"`
	Version string   `json:"version"`
	Store   string   `json:"store"`
	Figures []Figure `json:"figures"`
}

// Print writes o to standard output.
func (o Output) Print() error { return json.NewEncoder(os.Stdout).Encode(o) }

// Wanted is the set of figures named in a comma-separated list (the
// commands' -figures flag).
func Wanted(list string) map[string]bool {
	want := map[string]bool{}
	for _, f := range strings.Split(list, ",") {
		want[strings.TrimSpace(f)] = true
	}
	return want
}

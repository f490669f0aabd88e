package main

import (
	"strings"
	"testing"
)

func TestParseScale(t *testing.T) {
	nodes, ids, err := parseScale("2,5,10x100000")
	if err != nil || len(nodes) != 3 || nodes[0] != 2 || nodes[2] != 10 || ids != 100000 {
		t.Fatalf("parseScale = %v %d %v", nodes, ids, err)
	}
	for _, bad := range []string{"10", "1x100", "2,ax100", "2x0", "2x-5", "x100"} {
		if _, _, err := parseScale(bad); err == nil || !strings.Contains(err.Error(), "-scale") {
			t.Errorf("parseScale(%q) = %v, want an error naming -scale", bad, err)
		}
	}
}

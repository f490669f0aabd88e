package freeport

import (
	"net"
	"strconv"
	"testing"
)

// Every address handed out is on loopback, below the ephemeral range,
// bindable, and never handed out twice.
func TestAddr(t *testing.T) {
	top := ephemeralStart()
	seen := map[string]bool{}
	for range 50 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if host != "127.0.0.1" || port < lowest || port >= top {
			t.Fatalf("%s: want 127.0.0.1 and a port in [%d, %d)", addr, lowest, top)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s does not bind: %v", addr, err)
		}
		_ = l.Close()
	}
}

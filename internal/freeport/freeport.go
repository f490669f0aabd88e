// Package freeport picks loopback TCP ports for tests that must name an
// address before the process that binds it starts (an etcd member whose
// peers are given its URL up front, a taskd launched with --listen).
//
// A port taken from the kernel with Listen(":0") and closed lies in the
// ephemeral range, where the kernel also picks the local port of every
// outgoing connection: a member that connects to its peers can take the
// very port reserved for another member before that one binds it, which
// fails its start with "address already in use". Ports are therefore
// picked below the ephemeral range, where no outgoing connection lands,
// and never twice in one process. The lock guards the ports handed out.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

const (
	// lowest is the lowest port handed out: above the well-known and most
	// registered service ports.
	lowest = 20000
	// fallbackEphemeral is Linux's default start of the ephemeral range,
	// used where /proc does not say.
	fallbackEphemeral = 32768
	// tries bounds the search for a port that binds.
	tries = 200
)

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// Addr returns "127.0.0.1:PORT" with a port below the ephemeral range that
// could be bound a moment ago and was not handed out before by this
// process.
func Addr() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	top := ephemeralStart()
	for range tries {
		port := lowest + rand.IntN(top-lowest)
		if handed[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			return "", err
		}
		handed[port] = true
		return l.Addr().String(), nil
	}
	return "", fmt.Errorf("freeport: no free port in [%d, %d) after %d tries", lowest, top, tries)
}

// ephemeralStart reads the start of the kernel's ephemeral port range.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallbackEphemeral
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return fallbackEphemeral
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= lowest+1000 {
		return fallbackEphemeral
	}
	return n
}

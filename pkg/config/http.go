package config

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// Limits of --console-host.
const (
	maxConsoleHosts   = 32
	maxConsoleHostLen = 253 // the longest DNS name
)

// setConsoleHosts reads --console-host: comma-separated entries, spaces
// around them ignored, empty = none.
func setConsoleHosts(c *Config, v string) error {
	c.ConsoleHosts = commaList(v)
	return nil
}

// checkConsoleHosts checks the --console-host entries: each a DNS name or
// an IP address, optionally with :PORT, with no scheme or path.
func checkConsoleHosts(hosts []string) error {
	if len(hosts) > maxConsoleHosts {
		return fmt.Errorf("%d host names: at most %d", len(hosts), maxConsoleHosts)
	}
	for _, h := range hosts {
		if len(h) > maxConsoleHostLen+6 {
			return fmt.Errorf("%.40q...: longer than %d bytes", h, maxConsoleHostLen)
		}
		name := h
		if host, port, err := net.SplitHostPort(h); err == nil {
			if err := checkPort(port); err != nil || port == "0" {
				return fmt.Errorf("%q: the port must be a number from 1 to 65535", h)
			}
			name = host
		} else if strings.Count(h, ":") > 1 { // a bare IPv6 address
			name = h
		} else if strings.Contains(h, ":") {
			return fmt.Errorf("%q is not NAME or NAME:PORT: %w", h, err)
		}
		if err := checkHostName(name); err != nil {
			return fmt.Errorf("%q: %w", h, err)
		}
	}
	return nil
}

// checkHostName checks the host of a --console-host entry: an IP address,
// or a DNS name of letters, digits, '-' and '.', at most 253 bytes.
func checkHostName(name string) error {
	if net.ParseIP(strings.Trim(name, "[]")) != nil {
		return nil
	}
	if name == "" || len(name) > maxConsoleHostLen {
		return fmt.Errorf("a host name is 1 to %d bytes", maxConsoleHostLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return errors.New("a host name has only letters, digits, '-' and '.' (no scheme, path or '*')")
		}
	}
	return nil
}

// checkMetricsListen checks --metrics-listen: empty (on --http), or a
// host:port other than --http's.
func checkMetricsListen(c Config) error {
	if c.MetricsListen == "" {
		return nil
	}
	if err := checkHostPort(c.MetricsListen); err != nil {
		return err
	}
	if _, port, _ := net.SplitHostPort(c.MetricsListen); c.MetricsListen == c.HTTP && port != "0" {
		return fmt.Errorf("%q is the --http address: leave --metrics-listen empty to serve the metrics there", c.MetricsListen)
	}
	return nil
}
